// SPDX-License-Identifier: Apache-2.0
// efsmi -q --json-format: any output gives cards or an Error, never a crash or an exception.
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "inject/discover.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    (void)inject::discover::parse_efsmi_json(
        std::string_view(reinterpret_cast<const char*>(data), size));
    return 0;
}
