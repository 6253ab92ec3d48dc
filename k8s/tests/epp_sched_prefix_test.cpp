// SPDX-License-Identifier: Apache-2.0
// The approximate prefix cache: prompt text, chained block hashes, the index and its LRUs.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "epp/scheduling/prefix_index.hpp"

namespace {

using nlohmann::json;

epp::PrefixOptions opts() {
    return {};  // 16 tokens x 4 characters = 64 per block, at most 256 blocks
}

json chat(int turns) {
    json messages = json::array();
    messages.push_back({{"role", "system"}, {"content", std::string(300, 's')}});
    for (int i = 0; i < turns; ++i) {
        messages.push_back({{"role", "user"},
                            {"content", "question " + std::to_string(i) + std::string(100, 'q')}});
        messages.push_back({{"role", "assistant"}, {"content", std::string(120, 'a')}});
    }
    return {{"model", "tiny"}, {"messages", messages}};
}

TEST(PrefixText, ChatMessagesOrCompletionPrompt) {
    EXPECT_EQ(epp::prefix_text({{"prompt", "hello"}}), "hello");
    EXPECT_EQ(epp::prefix_text({{"prompt", json::array({1, 2})}}), "[1,2]");
    EXPECT_EQ(epp::prefix_text({{"messages", json::array({{{"role", "user"}}})}}),
              R"([{"role":"user"}])");
    EXPECT_EQ(epp::prefix_text({{"input", "x"}}), "");
    EXPECT_EQ(epp::prefix_text(json::array()), "");
}

TEST(BlockHashes, BlocksPartialTailCapAndChaining) {
    const auto o = opts();
    EXPECT_TRUE(epp::block_hashes(std::string(63, 'x'), "m", o).empty());
    EXPECT_EQ(epp::block_hashes(std::string(64, 'x'), "m", o).size(), 1u);
    EXPECT_EQ(epp::block_hashes(std::string(65, 'x'), "m", o).size(), 2u);
    EXPECT_EQ(epp::block_hashes(std::string(64 * 300, 'x'), "m", o).size(), 256u);
    // Equal blocks hash differently at different depths: a hash names its whole prefix.
    auto h = epp::block_hashes(std::string(128, 'x'), "m", o);
    EXPECT_NE(h[0], h[1]);
    // A prefix's hashes are the head of a longer text's.
    auto longer = epp::block_hashes(std::string(128, 'x') + "tail", "m", o);
    EXPECT_EQ(std::vector<uint64_t>(longer.begin(), longer.begin() + 2), h);
    // Another model's chain shares nothing.
    EXPECT_NE(epp::block_hashes(std::string(128, 'x'), "other", o)[0], h[0]);
}

TEST(PrefixIndex, SameConversationExtendedMatchesEverySharedBlockOnTheSameEndpoint) {
    epp::PrefixIndex index(1000);
    const auto o = opts();
    auto turn1 = epp::block_hashes(epp::prefix_text(chat(1)), "tiny", o);
    index.add("10.0.0.1:8000", turn1);
    index.add("10.0.0.2:8000", epp::block_hashes(std::string(2000, 'z'), "tiny", o));
    // The next turn repeats the conversation so far and adds to it. Its JSON text shares the
    // earlier text up to the closing bracket, so every full block of turn 1 but the last
    // (partial) one matches.
    auto turn2 = epp::block_hashes(epp::prefix_text(chat(2)), "tiny", o);
    ASSERT_GT(turn2.size(), turn1.size());
    auto hits = index.match(turn2);
    ASSERT_EQ(hits.size(), 1u);
    EXPECT_EQ(hits.at("10.0.0.1:8000"), turn1.size() - 1);
    // Once served, the whole of turn 2 is held there.
    index.add("10.0.0.1:8000", turn2);
    EXPECT_EQ(index.match(turn2).at("10.0.0.1:8000"), turn2.size());
}

TEST(PrefixIndex, MatchStopsAtTheFirstUnheldBlock) {
    epp::PrefixIndex index(1000);
    index.add("a", {1, 2, 3});
    index.add("b", {1, 2});
    auto hits = index.match({1, 2, 3, 4});
    EXPECT_EQ(hits.at("a"), 3u);
    EXPECT_EQ(hits.at("b"), 2u);
    EXPECT_TRUE(index.match({9, 1, 2}).empty());
}

TEST(PrefixIndex, LruEvictsTheLeastRecentTailsFirst) {
    epp::PrefixIndex index(4);
    index.add("a", {1, 2, 3});
    index.add("a", {7, 8});  // 5 blocks in a 4-block LRU: 3 (oldest, a tail) goes
    EXPECT_EQ(index.size(), 4u);
    EXPECT_EQ(index.match({1, 2, 3}).at("a"), 2u);
    EXPECT_EQ(index.match({7, 8}).at("a"), 2u);
    index.add("a", {1});  // 1 is now the most recent; the next add evicts 2 then 8
    index.add("a", {5, 6});
    EXPECT_TRUE(index.match({7, 8}).count("a"));
    EXPECT_EQ(index.match({7, 8}).at("a"), 1u);
    EXPECT_EQ(index.match({1, 2}).at("a"), 1u);
    index.set_capacity("a", 1);  // shrinking evicts at once
    EXPECT_EQ(index.size(), 1u);
}

TEST(PrefixIndex, ModelsAreSeparate) {
    epp::PrefixIndex index(1000);
    const std::string prompt(640, 'p');
    index.add("a", epp::block_hashes(prompt, "llama", opts()));
    EXPECT_EQ(index.match(epp::block_hashes(prompt, "llama", opts())).at("a"), 10u);
    EXPECT_TRUE(index.match(epp::block_hashes(prompt, "qwen", opts())).empty());
}

TEST(PrefixIndex, DepartedEndpointsArePurged) {
    epp::PrefixIndex index(1000);
    index.add("a", {1, 2});
    index.add("b", {1, 2, 3});
    index.retain({"b"});
    auto hits = index.match({1, 2, 3});
    EXPECT_EQ(hits.size(), 1u);
    EXPECT_EQ(hits.at("b"), 3u);
    EXPECT_EQ(index.size(), 3u);
}

}  // namespace
