// SPDX-License-Identifier: Apache-2.0
#include "epp/scheduling/prefix_index.hpp"

#include <xxhash.h>

#include <algorithm>
#include <cstring>

namespace epp {

std::string prefix_text(const nlohmann::json& body) {
    if (!body.is_object()) return {};
    if (auto m = body.find("messages"); m != body.end()) return m->dump();
    if (auto p = body.find("prompt"); p != body.end())
        return p->is_string() ? p->get<std::string>() : p->dump();
    return {};
}

std::vector<uint64_t> block_hashes(std::string_view text, std::string_view model,
                                   const PrefixOptions& o) {
    const size_t block = o.block_chars();
    std::vector<uint64_t> out;
    if (block == 0 || text.size() < block) return out;
    size_t n = std::min((text.size() + block - 1) / block, static_cast<size_t>(o.max_blocks));
    out.reserve(n);
    uint64_t prev = XXH64(model.data(), model.size(), 0);
    // One buffer per block: its bytes, then the previous hash in little-endian order.
    std::string buf(block + 8, '\0');
    for (size_t i = 0; i < n; ++i) {
        std::string_view b = text.substr(i * block, block);
        std::memcpy(buf.data(), b.data(), b.size());
        for (int k = 0; k < 8; ++k)
            buf[b.size() + static_cast<size_t>(k)] = static_cast<char>(prev >> (8 * k));
        prev = XXH64(buf.data(), b.size() + 8, 0);
        out.push_back(prev);
    }
    return out;
}

std::unordered_map<std::string, size_t> PrefixIndex::match(
    const std::vector<uint64_t>& hashes) const {
    std::unordered_map<std::string, size_t> hits;
    std::lock_guard l(mu_);
    for (uint64_t h : hashes) {
        auto it = holders_.find(h);
        if (it == holders_.end() || it->second.empty()) break;
        for (const auto& e : it->second) ++hits[e];
    }
    return hits;
}

void PrefixIndex::evict_locked(const std::string& endpoint, Lru& lru) {
    while (lru.order.size() > lru.capacity) {
        uint64_t h = lru.order.back();
        lru.order.pop_back();
        lru.where.erase(h);
        --size_;
        auto it = holders_.find(h);
        if (it == holders_.end()) continue;
        std::erase(it->second, endpoint);
        if (it->second.empty()) holders_.erase(it);
    }
}

void PrefixIndex::add(const std::string& endpoint, const std::vector<uint64_t>& hashes) {
    std::lock_guard l(mu_);
    auto [it, fresh] = lrus_.try_emplace(endpoint);
    Lru& lru = it->second;
    if (fresh) lru.capacity = default_capacity_;
    for (auto h = hashes.rbegin(); h != hashes.rend(); ++h) {
        if (auto w = lru.where.find(*h); w != lru.where.end()) {
            lru.order.splice(lru.order.begin(), lru.order, w->second);
            continue;
        }
        lru.order.push_front(*h);
        lru.where[*h] = lru.order.begin();
        holders_[*h].push_back(endpoint);
        ++size_;
    }
    evict_locked(endpoint, lru);
}

void PrefixIndex::set_capacity(const std::string& endpoint, size_t blocks) {
    std::lock_guard l(mu_);
    Lru& lru = lrus_[endpoint];
    lru.capacity = blocks;
    evict_locked(endpoint, lru);
}

void PrefixIndex::retain(const std::set<std::string>& keep) {
    std::lock_guard l(mu_);
    for (auto it = lrus_.begin(); it != lrus_.end();) {
        if (keep.count(it->first)) {
            ++it;
            continue;
        }
        it->second.capacity = 0;
        evict_locked(it->first, it->second);
        it = lrus_.erase(it);
    }
}

size_t PrefixIndex::size() const {
    std::lock_guard l(mu_);
    return size_;
}

}  // namespace epp
