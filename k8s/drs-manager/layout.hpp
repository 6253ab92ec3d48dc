// SPDX-License-Identifier: Apache-2.0
#pragma once

// DRS layouts (docs/drs-manager.md): the ConfigMap's text read into named layouts, and one
// layout checked against the node's cards and DRS profiles into what each card should hold.
//
//   version: v1
//   layouts:
//     mixed:
//     - cards: {index: [0, 1]}     # or: all | {model: S60} | {pciBusId: ["0000:17:00.0"]}
//       profiles: {1g.11gb: 4}     # or: full | {} (the whole card, no instance)
//     - cards: {index: [2, 3]}
//       profiles: full

#include <cstdint>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "inject/device.hpp"
#include "inject/result.hpp"
#include "k8s/drs_layout_state.hpp"

namespace drs_manager {

/// The node label naming the layout a node should have (k8s/drs_layout_state.hpp).
using k8s::drs::kLayoutLabel;
/// The ConfigMap data key holding the layouts.
inline constexpr std::string_view kLayoutsKey = "layouts.yaml";
/// The most instances of one profile an entry may ask for.
inline constexpr std::uint32_t kMaxCount = 64;

/// Which cards an entry is for: every card, or those whose index, product or PCI bus id is
/// listed.
struct CardSelector {
    enum class By { All, Index, Model, PciBusId };
    By by = By::All;
    std::vector<std::uint32_t> indices;  ///< By::Index
    std::vector<std::string> names;      ///< By::Model: one product; By::PciBusId: lowercase ids

    [[nodiscard]] bool selects(const inject::device::Device& card) const;
    /// As the layout writes it: "all", "index [0, 1]", "model S60", "pciBusId [0000:17:00.0]".
    [[nodiscard]] std::string text() const;
};

/// Instances wanted per profile name; empty: the whole card, no instance ("full").
using ProfileCounts = std::map<std::string, std::uint32_t>;

struct LayoutEntry {
    CardSelector cards;
    ProfileCounts profiles;
};

struct Layout {
    std::string name;  ///< the label's value that picks it
    std::vector<LayoutEntry> entries;
};

/// What one card should hold.
struct CardTarget {
    std::uint32_t card = 0;
    ProfileCounts profiles;
    friend bool operator==(const CardTarget&, const CardTarget&) = default;
};

/// Parses the layouts text (`source` names it in errors: "configmap enflame-system/
/// enflame-drs-layouts layouts.yaml"). Every key is checked; an error names the line and the
/// key path ("layouts.mixed[0].profiles.1g.11gb").
[[nodiscard]] inject::Result<std::vector<Layout>> parse_layouts(std::string_view text,
                                                                std::string_view source);

/// The layout named `name`; NotFound naming the label value and the layouts there are.
[[nodiscard]] inject::Result<const Layout*> find_layout(const std::vector<Layout>& layouts,
                                                        std::string_view name);

/// `layout` checked against `host` (its cards and drs_profiles, as efsmi reported them): what
/// each selected card should hold, by card index. Cards no entry selects are not in it (left
/// as they are). An error names the layout, the card or entry, and the reason: an entry that
/// selects no card, a card two entries select, a profile the node does not offer, more
/// instances than the profile allows, or a set that does not fit the card's slices.
[[nodiscard]] inject::Result<std::vector<CardTarget>> resolve_layout(
    const Layout& layout, const inject::device::Host& host);

}  // namespace drs_manager
