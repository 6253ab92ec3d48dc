// SPDX-License-Identifier: Apache-2.0
// Differential: the fast block-YAML reader must give exactly yaml-cpp's tree for every input
// it accepts (it declines the rest), since the shim trusts it on every container start.
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "cdi/tree.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    std::string_view text(reinterpret_cast<const char*>(data), size);
    auto fast = inject::cdi::detail::parse_simple_yaml(text);
    if (!fast) return 0;
    auto slow = inject::cdi::detail::parse_yaml_tree(text, "fuzz.yaml");
    if (!slow || !(*slow == *fast)) __builtin_trap();
    return 0;
}
