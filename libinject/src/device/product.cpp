// SPDX-License-Identifier: Apache-2.0
#include <array>
#include <string_view>

#include "inject/device.hpp"

namespace inject::device {

ProductInfo product_info(const std::string& product) {
    // Public facts (docs/device-model.md, products). Unknown products keep empty fields: we
    // never guess.
    struct Row {
        std::string_view product, arch, family;
    };
    static constexpr std::array<Row, 6> kProducts{{
        {"S60", "GCU300", "scorpio"},
        {"T10", "GCU200", "LEO"},
        {"T11", "GCU200", "LEO"},
        {"I20", "GCU200", "LEO"},
        {"T20", "GCU200", "PAVO"},
        {"T21", "GCU200", "PAVO"},
    }};
    for (const auto& r : kProducts)
        if (r.product == product) return {std::string(r.arch), std::string(r.family)};
    return {};
}

std::string drs_name(const DrsInstance& in) {
    return std::to_string(in.parent_index) + ":" + in.profile + ":" +
           std::to_string(in.instance_id);
}

std::string drs_address(const DrsInstance& in) {
    return in.uuid.empty() ? drs_name(in) : "DRS-" + in.uuid;
}

}  // namespace inject::device
