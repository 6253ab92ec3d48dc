// SPDX-License-Identifier: Apache-2.0
#include "drs-manager/fit.hpp"

#include <algorithm>

namespace drs_manager {

std::uint32_t CardSlices::of(std::string_view profile) const {
    return inject::drs::profile_slices(profile).value_or(total);
}

CardSlices card_slices_of(const std::vector<inject::device::DrsProfile>& profiles) {
    return {std::max<std::uint32_t>(inject::drs::card_slices(profiles), 1)};
}

void sort_for_creation(std::vector<inject::device::DrsProfile>& creates, const CardSlices& slices) {
    std::stable_sort(creates.begin(), creates.end(), [&](const auto& a, const auto& b) {
        const auto sa = slices.of(a.name), sb = slices.of(b.name);
        return sa != sb ? sa > sb : a.name < b.name;
    });
}

bool fits(const CardSlices& slices, std::vector<inject::drs::SliceRun> taken,
          const std::vector<inject::device::DrsProfile>& creates) {
    for (const auto& p : creates) {
        const std::uint32_t n = slices.of(p.name);
        const auto start = inject::drs::first_fit(slices.total, taken, n);
        if (!start) return false;
        taken.push_back({*start, n});
    }
    return true;
}

}  // namespace drs_manager
