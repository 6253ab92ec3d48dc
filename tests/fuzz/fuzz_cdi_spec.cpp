// SPDX-License-Identifier: Apache-2.0
// CDI spec parsing + validation (YAML and JSON): any input gives a Spec or an Error. A spec
// that parses and validates must survive a write/read round trip in both formats unchanged.
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "inject/cdi_io.hpp"
#include "inject/cdi_validate.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    std::string_view text(reinterpret_cast<const char*>(data), size);
    auto spec = inject::cdi::parse_spec(text, "fuzz.yaml");
    if (!spec) return 0;
    auto problems = inject::cdi::validate(*spec, "fuzz.yaml");
    (void)inject::cdi::minimum_version(*spec);
    if (!problems.empty()) return 0;
    for (auto fmt : {inject::cdi::Format::Yaml, inject::cdi::Format::Json}) {
        auto again = inject::cdi::parse_spec(inject::cdi::serialize(*spec, fmt), "again");
        if (!again || !(*again == *spec)) __builtin_trap();
    }
    return 0;
}
