// SPDX-License-Identifier: Apache-2.0
#include "drs-manager/layout.hpp"

#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <cctype>
#include <charconv>
#include <set>

#include "drs-manager/fit.hpp"

namespace drs_manager {
namespace {

using inject::Errc;
using inject::fail;
using inject::device::Device;
using inject::device::DrsProfile;
using inject::device::Host;

std::string lower(std::string s) {
    std::transform(s.begin(), s.end(), s.begin(),
                   [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
    return s;
}

template <typename T>
std::string join(const std::vector<T>& items) {
    std::string out;
    for (const auto& i : items) {
        if (!out.empty()) out += ", ";
        if constexpr (std::is_same_v<T, std::string>)
            out += i;
        else
            out += std::to_string(i);
    }
    return out;
}

// ---- parsing ----

/// Reads one input; every error names the source, the line and the key path.
struct Reader {
    std::string_view source;

    [[nodiscard]] inject::Unexpected bad(const YAML::Node& n, const std::string& path,
                                         const std::string& why) const {
        const std::string line =
            n.Mark().line >= 0 ? ": line " + std::to_string(n.Mark().line + 1) : "";
        return fail(Errc::InvalidInput, std::string(source) + line + ": " + path + ": " + why);
    }

    inject::Result<void> only_keys(const YAML::Node& map, const std::string& path,
                                   const std::set<std::string>& allowed) const {
        if (!map.IsMap()) return bad(map, path, "want a mapping");
        for (const auto& kv : map) {
            const auto key = kv.first.as<std::string>();
            if (!allowed.contains(key))
                return bad(kv.first, path.empty() ? key : path + "." + key, "unknown key");
        }
        return inject::ok();
    }

    inject::Result<std::string> scalar(const YAML::Node& n, const std::string& path) const {
        if (!n.IsScalar()) return bad(n, path, "want a string");
        return n.as<std::string>();
    }

    inject::Result<std::uint32_t> whole(const YAML::Node& n, const std::string& path,
                                        std::uint32_t low, std::uint32_t high) const {
        const std::string want =
            "want a whole number from " + std::to_string(low) + " to " + std::to_string(high);
        if (!n.IsScalar()) return bad(n, path, want);
        const auto s = n.as<std::string>();
        std::uint32_t v = 0;
        const auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
        if (s.empty() || ec != std::errc{} || p != s.data() + s.size() || v < low || v > high)
            return bad(n, path, want + ", got '" + s + "'");
        return v;
    }

    /// A non-empty list of distinct scalars.
    inject::Result<std::vector<std::string>> list(const YAML::Node& n,
                                                  const std::string& path) const {
        if (!n.IsSequence() || n.size() == 0) return bad(n, path, "want a non-empty list");
        std::vector<std::string> out;
        for (std::size_t i = 0; i < n.size(); ++i) {
            INJECT_TRY(auto s, scalar(n[i], path + "[" + std::to_string(i) + "]"));
            if (std::find(out.begin(), out.end(), s) != out.end())
                return bad(n[i], path + "[" + std::to_string(i) + "]",
                           "'" + s + "' is listed twice");
            out.push_back(std::move(s));
        }
        return out;
    }

    inject::Result<CardSelector> cards(const YAML::Node& n, const std::string& path) const {
        CardSelector out;
        if (n.IsScalar()) {
            if (n.as<std::string>() == "all") return out;
            return bad(
                n, path,
                "want all or one of index, model, pciBusId; got '" + n.as<std::string>() + "'");
        }
        INJECT_TRY_VOID(only_keys(n, path, {"index", "model", "pciBusId"}));
        if (n.size() != 1) return bad(n, path, "want exactly one of index, model, pciBusId");
        if (const auto idx = n["index"]) {
            out.by = CardSelector::By::Index;
            INJECT_TRY(const auto distinct, list(idx, path + ".index"));
            for (std::size_t i = 0; i < distinct.size(); ++i) {
                INJECT_TRY(const auto v,
                           whole(idx[i], path + ".index[" + std::to_string(i) + "]", 0, 1023));
                out.indices.push_back(v);
            }
        } else if (const auto model = n["model"]) {
            out.by = CardSelector::By::Model;
            INJECT_TRY(auto s, scalar(model, path + ".model"));
            if (s.empty()) return bad(model, path + ".model", "want a product name (S60)");
            out.names.push_back(std::move(s));
        } else {
            out.by = CardSelector::By::PciBusId;
            INJECT_TRY(const auto ids, list(n["pciBusId"], path + ".pciBusId"));
            for (const auto& id : ids) out.names.push_back(lower(id));
        }
        return out;
    }

    inject::Result<ProfileCounts> profiles(const YAML::Node& n, const std::string& path) const {
        ProfileCounts out;
        if (n.IsScalar()) {
            if (n.as<std::string>() == "full") return out;
            return bad(
                n, path,
                "want full or a mapping of profile to count, got '" + n.as<std::string>() + "'");
        }
        if (!n.IsMap()) return bad(n, path, "want full or a mapping of profile to count");
        for (const auto& kv : n) {
            INJECT_TRY(auto name, scalar(kv.first, path));
            const std::string at = path + "." + name;
            if (out.contains(name)) return bad(kv.first, at, "given twice");
            INJECT_TRY(out[name], whole(kv.second, at, 1, kMaxCount));
        }
        return out;
    }

    inject::Result<Layout> layout(const std::string& name, const YAML::Node& n,
                                  const std::string& path) const {
        Layout out{name, {}};
        if (!n.IsSequence() || n.size() == 0)
            return bad(n, path, "want a non-empty list of entries");
        for (std::size_t i = 0; i < n.size(); ++i) {
            const auto e = n[i];
            const std::string at = path + "[" + std::to_string(i) + "]";
            INJECT_TRY_VOID(only_keys(e, at, {"cards", "profiles"}));
            if (!e["cards"]) return bad(e, at + ".cards", "missing");
            if (!e["profiles"]) return bad(e, at + ".profiles", "missing");
            INJECT_TRY(auto sel, cards(e["cards"], at + ".cards"));
            INJECT_TRY(auto counts, profiles(e["profiles"], at + ".profiles"));
            out.entries.push_back({std::move(sel), std::move(counts)});
        }
        return out;
    }
};

/// A label value: at most 63 of [A-Za-z0-9._-], starting and ending alphanumeric.
bool label_value(std::string_view s) {
    auto alnum = [](char c) { return std::isalnum(static_cast<unsigned char>(c)) != 0; };
    if (s.empty() || s.size() > 63 || !alnum(s.front()) || !alnum(s.back())) return false;
    return std::all_of(s.begin(), s.end(),
                       [&](char c) { return alnum(c) || c == '-' || c == '_' || c == '.'; });
}

// ---- checking against the node ----

const DrsProfile* offered(const Host& host, const std::string& name) {
    const auto p = std::find_if(host.drs_profiles.begin(), host.drs_profiles.end(),
                                [&](const DrsProfile& q) { return q.name == name; });
    return p == host.drs_profiles.end() ? nullptr : &*p;
}

std::string counts_text(const ProfileCounts& counts) {
    std::string out;
    for (const auto& [name, n] : counts)
        out += (out.empty() ? "" : ", ") + name + ": " + std::to_string(n);
    return "{" + out + "}";
}

/// Why `counts` cannot be made on one card of `host`; empty when it can.
std::string card_problem(const ProfileCounts& counts, const Host& host) {
    std::vector<DrsProfile> creates;
    for (const auto& [name, n] : counts) {
        const DrsProfile* p = offered(host, name);
        if (p == nullptr) {
            std::vector<std::string> names;
            for (const auto& q : host.drs_profiles) names.push_back(q.name);
            return "profile '" + name + "' is not offered by this node (" +
                   (names.empty() ? std::string("it offers no DRS profile")
                                  : "offered: " + join(names)) +
                   ")";
        }
        if (n > p->max_instances)
            return std::to_string(n) + " instances of '" + name + "' asked, the profile allows " +
                   std::to_string(p->max_instances);
        creates.insert(creates.end(), n, *p);
    }
    const CardSlices slices = card_slices_of(host.drs_profiles);
    sort_for_creation(creates, slices);
    if (!fits(slices, {}, creates))
        return counts_text(counts) + " does not fit the card's " + std::to_string(slices.total) +
               " slice(s)";
    return {};
}

}  // namespace

bool CardSelector::selects(const Device& card) const {
    switch (by) {
        case By::All:
            return true;
        case By::Index:
            return std::find(indices.begin(), indices.end(), card.index) != indices.end();
        case By::Model:
            return card.product == names.front();
        case By::PciBusId:
            return std::find(names.begin(), names.end(), lower(card.pci_bus_id)) != names.end();
    }
    return false;
}

std::string CardSelector::text() const {
    switch (by) {
        case By::All:
            return "all";
        case By::Index:
            return "index [" + join(indices) + "]";
        case By::Model:
            return "model " + names.front();
        case By::PciBusId:
            return "pciBusId [" + join(names) + "]";
    }
    return {};
}

inject::Result<std::vector<Layout>> parse_layouts(std::string_view text, std::string_view source) {
    const Reader r{source};
    YAML::Node root;
    try {
        root = YAML::Load(std::string(text));
    } catch (const YAML::Exception& e) {
        return fail(Errc::InvalidInput, std::string(source) + ": line " +
                                            std::to_string(e.mark.line + 1) +
                                            ": not YAML: " + e.msg);
    }
    if (!root || root.IsNull())
        return fail(Errc::InvalidInput, std::string(source) + ": empty (want version and layouts)");
    INJECT_TRY_VOID(r.only_keys(root, "", {"version", "layouts"}));
    if (!root["version"]) return r.bad(root, "version", "missing (want v1)");
    INJECT_TRY(const auto version, r.scalar(root["version"], "version"));
    if (version != "v1") return r.bad(root["version"], "version", "want v1, got '" + version + "'");
    const auto all = root["layouts"];
    if (!all) return r.bad(root, "layouts", "missing");
    if (!all.IsMap() || all.size() == 0)
        return r.bad(all, "layouts", "want a mapping of layout names to entries");
    std::vector<Layout> out;
    for (const auto& kv : all) {
        INJECT_TRY(auto name, r.scalar(kv.first, "layouts"));
        const std::string path = "layouts." + name;
        if (!label_value(name))
            return r.bad(
                kv.first, path,
                "not a label value (at most 63 of A-Z a-z 0-9 . _ -, alphanumeric at both ends)");
        if (std::any_of(out.begin(), out.end(), [&](const Layout& l) { return l.name == name; }))
            return r.bad(kv.first, path, "given twice");
        INJECT_TRY(auto layout, r.layout(name, kv.second, path));
        out.push_back(std::move(layout));
    }
    return out;
}

inject::Result<const Layout*> find_layout(const std::vector<Layout>& layouts,
                                          std::string_view name) {
    for (const auto& l : layouts)
        if (l.name == name) return &l;
    std::vector<std::string> names;
    for (const auto& l : layouts) names.push_back(l.name);
    return fail(Errc::NotFound, "label " + std::string(kLayoutLabel) + "=" + std::string(name) +
                                    ": no such layout (layouts: " + join(names) + ")");
}

inject::Result<std::vector<CardTarget>> resolve_layout(const Layout& layout, const Host& host) {
    const std::string where = "layout '" + layout.name + "': ";
    std::vector<CardTarget> out;
    std::map<std::uint32_t, std::size_t> chosen_by;  // card index -> entry
    for (std::size_t i = 0; i < layout.entries.size(); ++i) {
        const auto& e = layout.entries[i];
        bool any = false;
        for (const auto& card : host.devices) {
            if (!e.cards.selects(card)) continue;
            any = true;
            const std::string at = where + "card " + std::to_string(card.index) + ": ";
            if (const auto [it, fresh] = chosen_by.emplace(card.index, i); !fresh)
                return fail(Errc::InvalidInput,
                            at + "selected by entry " + std::to_string(it->second) + " (cards: " +
                                layout.entries[it->second].cards.text() + ") and entry " +
                                std::to_string(i) + " (cards: " + e.cards.text() + ")");
            if (const auto why = card_problem(e.profiles, host); !why.empty())
                return fail(Errc::InvalidInput, at + why);
            out.push_back({card.index, e.profiles});
        }
        if (!any) {
            std::vector<std::uint32_t> cards;
            for (const auto& card : host.devices) cards.push_back(card.index);
            return fail(Errc::InvalidInput,
                        where + "entry " + std::to_string(i) + " (cards: " + e.cards.text() +
                            ") selects no card of this node (cards: " + join(cards) + ")");
        }
    }
    std::sort(out.begin(), out.end(), [](const auto& a, const auto& b) { return a.card < b.card; });
    return out;
}

}  // namespace drs_manager
