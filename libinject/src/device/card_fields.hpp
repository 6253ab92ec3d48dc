// SPDX-License-Identifier: Apache-2.0
#pragma once
// The fields of one efsmi card, shared by the text and the JSON parser: both print the same
// section and key names, so one table decides which keys we read, how a value is checked, and
// which keys a card must have. Internal to libinject/src/device.

#include <optional>
#include <string>
#include <string_view>

#include "inject/discover.hpp"

namespace inject::discover::detail {

/// Collects the `Key : value` pairs of one card and turns them into a RawCard.
class CardFields {
public:
    explicit CardFields(std::uint32_t index) { card_.index = index; }

    /// Takes one key/value pair. Unknown keys are ignored (efsmi prints many we do not use).
    /// The error message is "bad value 'x' for 'Total Size'" or "duplicate 'Dev UUID'";
    /// the caller adds where it was.
    [[nodiscard]] Result<void> set(std::string_view key, std::string_view value);

    /// The card, or "no 'Dev UUID'" naming every required key that was missing.
    [[nodiscard]] Result<RawCard> finish() &&;

private:
    RawCard card_;
    std::optional<std::uint32_t> domain_, bus_, dev_, func_;
    bool have_name_ = false, have_uuid_ = false, have_memory_ = false, have_serial_ = false,
         have_device_id_ = false, have_driver_ = false;
};

}  // namespace inject::discover::detail
