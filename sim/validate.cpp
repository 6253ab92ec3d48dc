// SPDX-License-Identifier: Apache-2.0
// The description checks that span entries. Each names the entry that breaks the rule and
// the earlier one it collides with.

#include <algorithm>
#include <map>
#include <set>
#include <tuple>

#include "desc.hpp"
#include "drs.hpp"

namespace sim {

namespace {

using inject::Errc;
using inject::Result;

inject::Unexpected bad_at(int line, const std::string& where, const std::string& what) {
    std::string msg = line > 0 ? "line " + std::to_string(line) + ": " : "";
    return inject::fail(Errc::InvalidInput, msg + where + ": " + what);
}

std::string card_path(std::size_t i) {
    return "cards[" + std::to_string(i) + "]";
}
std::string inst_path(std::size_t i) {
    return "drs.instances[" + std::to_string(i) + "]";
}

int line(const std::vector<int>& lines, std::size_t i) {
    return i < lines.size() ? lines[i] : 0;
}

// Remembers the first entry that had each value of one key; `seen()` names it on a repeat.
template <typename K>
class FirstSeen {
public:
    /// The path of the entry that had `key` first, or "" (and records `path`).
    std::string seen(const K& key, const std::string& path) {
        const auto [it, fresh] = first_.emplace(key, path);
        return fresh ? "" : it->second;
    }

private:
    std::map<K, std::string> first_;
};

Result<void> check_cards(const Host& h, const Lines& lines) {
    FirstSeen<std::uint32_t> index, minor;
    FirstSeen<std::string> uuid, bus;
    const std::size_t n = h.cards.size();
    for (std::size_t i = 0; i < n; ++i) {
        const Card& c = h.cards[i];
        const std::string p = card_path(i);
        const int l = line(lines.cards, i);
        if (auto o = index.seen(c.index, p); !o.empty()) {
            return bad_at(l, p + ".index",
                          "duplicate index " + std::to_string(c.index) + " (also " + o + ")");
        }
        if (c.index >= n) {
            return bad_at(l, p + ".index",
                          "index " + std::to_string(c.index) + " out of range (" +
                              std::to_string(n) + " cards: want 0.." + std::to_string(n - 1) + ")");
        }
        if (auto o = minor.seen(c.minor, p); !o.empty()) {
            return bad_at(l, p + ".minor",
                          "duplicate minor " + std::to_string(c.minor) + " (also " + o + ")");
        }
        if (h.control_major == h.major && c.minor == h.control_minor) {
            return bad_at(
                l, p + ".minor",
                "minor " + std::to_string(c.minor) + " is the control node's (control.minor)");
        }
        if (auto o = uuid.seen(c.uuid, p); !o.empty()) {
            return bad_at(l, p + ".uuid", "duplicate uuid '" + c.uuid + "' (also " + o + ")");
        }
        if (auto o = bus.seen(c.bus_id, p); !o.empty()) {
            return bad_at(l, p + ".bus_id", "duplicate bus id '" + c.bus_id + "' (also " + o + ")");
        }
    }
    return inject::ok();
}

Result<void> check_profiles(const Host& h, const Lines& lines) {
    FirstSeen<std::pair<std::string, std::string>> name;
    FirstSeen<std::pair<std::string, std::uint32_t>> id;
    for (std::size_t i = 0; i < h.profiles.size(); ++i) {
        const Profile& pr = h.profiles[i];
        const std::string p = "drs.profiles[" + std::to_string(i) + "]";
        const int l = line(lines.profiles, i);
        if (auto o = name.seen({pr.product, pr.name}, p); !o.empty()) {
            return bad_at(l, p + ".name", "duplicate profile '" + pr.name + "' (also " + o + ")");
        }
        if (auto o = id.seen({pr.product, pr.id}, p); !o.empty()) {
            return bad_at(l, p + ".id",
                          "duplicate profile id " + std::to_string(pr.id) + " (also " + o + ")");
        }
    }
    return inject::ok();
}

const Profile* offered(const Host& h, const Card& c, const std::string& name) {
    for (const auto* p : profiles_of(h, c)) {
        if (p->name == name) return p;
    }
    return nullptr;
}

Result<void> check_instances(const Host& h, const Lines& lines) {
    FirstSeen<std::pair<std::uint32_t, std::uint32_t>> id;
    FirstSeen<std::string> uuid;
    for (std::size_t i = 0; i < h.cards.size(); ++i) (void)uuid.seen(h.cards[i].uuid, card_path(i));
    std::map<std::pair<std::uint32_t, std::string>, std::uint32_t> count;
    for (std::size_t i = 0; i < h.instances.size(); ++i) {
        const Instance& in = h.instances[i];
        const std::string p = inst_path(i);
        const int l = line(lines.instances, i);
        const auto card = std::find_if(h.cards.begin(), h.cards.end(),
                                       [&](const Card& k) { return k.index == in.card; });
        if (card == h.cards.end()) {
            return bad_at(l, p + ".card", "no card with index " + std::to_string(in.card));
        }
        const Profile* pr = offered(h, *card, in.profile);
        if (pr == nullptr) {
            return bad_at(l, p + ".profile",
                          "card " + std::to_string(in.card) + " (" + card->product +
                              ") offers no profile '" + in.profile + "'");
        }
        if (auto o = id.seen({in.card, in.instance_id}, p); !o.empty()) {
            return bad_at(l, p + ".instance_id",
                          "duplicate instance " + std::to_string(in.instance_id) + " on card " +
                              std::to_string(in.card) + " (also " + o + ")");
        }
        if (auto o = uuid.seen(in.uuid, p); !o.empty()) {
            return bad_at(l, p + ".uuid", "duplicate uuid '" + in.uuid + "' (also " + o + ")");
        }
        if (++count[{in.card, in.profile}] > pr->max_instances) {
            return bad_at(l, p,
                          "card " + std::to_string(in.card) + " has more than " +
                              std::to_string(pr->max_instances) + " instances of '" + in.profile +
                              "'");
        }
    }
    return inject::ok();
}

Result<void> check_libraries(const Host& h, const Lines& lines) {
    FirstSeen<std::string> name;
    for (std::size_t i = 0; i < h.runtime_libraries.size(); ++i) {
        const std::string p = "runtime_libraries[" + std::to_string(i) + "]";
        std::vector<std::string> made{h.runtime_libraries[i]};
        for (const auto& [link, target] : library_links(h.runtime_libraries[i]))
            made.push_back(link);
        for (const auto& m : made) {
            if (auto o = name.seen(m, p); !o.empty()) {
                return bad_at(line(lines.libraries, i), p,
                              "'" + m + "' would be made twice (also " + o + ")");
            }
        }
    }
    return inject::ok();
}

}  // namespace

Result<void> validate(const Parsed& p) {
    INJECT_TRY_VOID(check_cards(p.host, p.lines));
    INJECT_TRY_VOID(check_profiles(p.host, p.lines));
    INJECT_TRY_VOID(check_instances(p.host, p.lines));
    std::vector<Instance> placed = p.host.instances;
    if (auto e = place_instances(p.host, placed); !e.empty())
        return inject::fail(Errc::InvalidInput, "drs.instances: " + e);
    INJECT_TRY_VOID(check_libraries(p.host, p.lines));
    std::set<std::string> missing;
    for (const auto& s : p.host.faults.efml_missing_symbols) {
        if (!missing.insert(s).second) {
            return inject::fail(Errc::InvalidInput,
                                "faults.efml_missing_symbols: '" + s + "' listed twice");
        }
    }
    return inject::ok();
}

}  // namespace sim
