// SPDX-License-Identifier: Apache-2.0
#pragma once

/// \file
/// The approximate prefix cache: which endpoint has probably cached which prompt prefix,
/// learnt from our own routing (not from the engines). Prompts are cut into blocks of
/// block_tokens x chars_per_token characters, each block hashed with xxh64 chained on the
/// previous block's hash, the chain seeded with the model's hash, so a block hash names the
/// whole prefix up to it and two models never share one.

#include <cstdint>
#include <list>
#include <mutex>
#include <nlohmann/json.hpp>
#include <set>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

namespace epp {

/// How prompts become blocks (upstream's prefix-cache-scorer parameters).
struct PrefixOptions {
    int block_tokens = 16;        ///< blockSizeTokens
    int chars_per_token = 4;      ///< averageCharactersPerToken
    int max_blocks = 256;         ///< maxPrefixBlocksToMatch; longer prompts are cut
    size_t lru_capacity = 31250;  ///< lruCapacityPerServer, when num_gpu_blocks is unknown
    [[nodiscard]] size_t block_chars() const {
        return static_cast<size_t>(block_tokens) * static_cast<size_t>(chars_per_token);
    }
};

/// The text a request's prefix is read from: a chat request's `messages` as compact JSON, a
/// completion's `prompt` (a string as is, anything else as JSON); empty for other bodies.
[[nodiscard]] std::string prefix_text(const nlohmann::json& body);

/// The chained block hashes of `text`; a trailing partial block counts, text shorter than one
/// block has none.
[[nodiscard]] std::vector<uint64_t> block_hashes(std::string_view text, std::string_view model,
                                                 const PrefixOptions& o);

/// hash -> endpoints that hold it, with one LRU of hashes per endpoint. Thread-safe.
class PrefixIndex {
public:
    explicit PrefixIndex(size_t default_capacity) : default_capacity_(default_capacity) {}

    /// Per endpoint, how many leading blocks of `hashes` it holds: the walk stops at the first
    /// block no endpoint holds (upstream's greedy longest-prefix match).
    [[nodiscard]] std::unordered_map<std::string, size_t> match(
        const std::vector<uint64_t>& hashes) const;
    /// `endpoint` now holds these blocks. They enter its LRU last block first, so the prompt's
    /// head is the most recent and eviction takes tails before heads.
    void add(const std::string& endpoint, const std::vector<uint64_t>& hashes);
    /// The LRU size of `endpoint` (from its num_gpu_blocks); shrinking evicts at once.
    void set_capacity(const std::string& endpoint, size_t blocks);
    /// Forgets every endpoint not in `keep`.
    void retain(const std::set<std::string>& keep);
    /// Blocks held, summed over endpoints.
    [[nodiscard]] size_t size() const;

private:
    struct Lru {
        size_t capacity = 0;
        std::list<uint64_t> order;  // most recent first
        std::unordered_map<uint64_t, std::list<uint64_t>::iterator> where;
    };
    void evict_locked(const std::string& endpoint, Lru& lru);

    mutable std::mutex mu_;
    size_t default_capacity_;
    std::unordered_map<std::string, Lru> lrus_;
    std::unordered_map<uint64_t, std::vector<std::string>> holders_;
    size_t size_ = 0;
};

}  // namespace epp
