// SPDX-License-Identifier: Apache-2.0
// efsmi -q text and the DRS listings: any output gives cards or an Error, never a crash.
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "inject/discover.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    std::string_view text(reinterpret_cast<const char*>(data), size);
    (void)inject::discover::parse_efsmi_text(text);
    (void)inject::discover::parse_efsmi_drs_instances(text);
    (void)inject::discover::parse_efsmi_drs_profiles(text);
    (void)inject::discover::parse_memory(text.substr(0, 64));
    return 0;
}
