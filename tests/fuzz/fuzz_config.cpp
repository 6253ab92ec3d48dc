// SPDX-License-Identifier: Apache-2.0
// The TOML config loader: any input gives a Config or an Error, never a crash or an exception.
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "inject/config.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    std::string_view text(reinterpret_cast<const char*>(data), size);
    auto cfg = inject::config::parse(text, "fuzz.toml");
    if (cfg) {
        // What we print must parse back to the same thing.
        auto again = inject::config::parse(inject::config::to_toml(*cfg), "again.toml");
        if (!again || inject::config::to_toml(*again) != inject::config::to_toml(*cfg))
            __builtin_trap();
    }
    return 0;
}
