// SPDX-License-Identifier: Apache-2.0
// DRS in the efsmi simulator (drs.hpp). The table layout (borders, header words, column
// order) is our model of what gcushare parses: docs/efsmi-model.md.
#include "drs.hpp"

#include <fcntl.h>
#include <sys/file.h>
#include <unistd.h>

#include <algorithm>
#include <charconv>
#include <cstdio>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "telemetry.hpp"

namespace sim {
namespace {

using json = nlohmann::json;

/// <g> of a "<g>g.<m>gb" profile name; nullopt for other names ("full").
std::optional<std::uint32_t> g_of(std::string_view name) {
    std::uint32_t g = 0;
    auto [p, ec] = std::from_chars(name.data(), name.data() + name.size(), g);
    const std::string_view rest(p, static_cast<std::size_t>(name.data() + name.size() - p));
    if (ec != std::errc{} || g == 0 || !rest.starts_with("g.") || !rest.ends_with("gb"))
        return std::nullopt;
    return g;
}

const Card* card_at(const Host& h, std::uint32_t index) {
    for (const auto& c : h.cards)
        if (c.index == index) return &c;
    return nullptr;
}

const Profile* profile_named(const Host& h, const Card& c, const std::string& name) {
    for (const auto* p : profiles_of(h, c))
        if (p->name == name) return p;
    return nullptr;
}

std::uint32_t slices(const Host& h, const Card& c, const std::string& profile) {
    return g_of(profile).value_or(drs_capacity(h, c));
}

std::uint32_t sips(const Host& h, const Card& c, const Profile& p) {
    return p.sips != 0 ? p.sips : 6 * slices(h, c, p.name);  // S60: 24 SIPs in 4 slices
}

/// Slices [start, start+n) of card `card` are free among `instances`?
bool is_free(const std::vector<Instance>& instances, std::uint32_t card, std::uint32_t start,
             std::uint32_t n) {
    for (const auto& i : instances) {
        if (i.card != card || i.placement.empty()) continue;
        std::uint32_t s = 0, m = 0;
        if (std::sscanf(i.placement.c_str(), "%u:%u", &s, &m) != 2) continue;
        if (start < s + m && s < start + n) return false;
    }
    return true;
}

/// First fit of `n` slices on card `c`, aligned to `n` as a hardware partition would be.
std::optional<std::uint32_t> first_fit(const Host& h, const Card& c,
                                       const std::vector<Instance>& instances, std::uint32_t n) {
    const std::uint32_t cap = drs_capacity(h, c);
    for (std::uint32_t start = 0; n > 0 && start + n <= cap; start += n)
        if (is_free(instances, c.index, start, n)) return start;
    return std::nullopt;
}

// ---- the tables ----

using Row = std::vector<std::string>;

/// A bordered table: `head`, the rows, and `notes` (full-width lines) when there are no rows.
std::string table(const std::string& title, const Row& head, const std::vector<Row>& rows,
                  const std::vector<std::string>& notes) {
    std::vector<std::size_t> w(head.size());
    for (std::size_t i = 0; i < head.size(); ++i) w[i] = head[i].size();
    for (const auto& r : rows)
        for (std::size_t i = 0; i < r.size(); ++i) w[i] = std::max(w[i], r[i].size());
    std::size_t inner = head.size() * 3 - 1;
    for (auto x : w) inner += x;
    auto rule = [&](char c) {
        std::string s = "+";
        for (auto x : w) s += std::string(x + 2, c) + "+";
        return s + "\n";
    };
    auto line = [&](const Row& r) {
        std::string s = "|";
        for (std::size_t i = 0; i < r.size(); ++i)
            s += " " + r[i] + std::string(w[i] - r[i].size(), ' ') + " |";
        return s + "\n";
    };
    auto wide = [&](const std::string& text) {
        return "| " + text +
               std::string(inner > text.size() + 1 ? inner - text.size() - 1 : 0, ' ') + "|\n";
    };
    std::string out =
        "+" + std::string(inner, '-') + "+\n" + wide(title) + rule('-') + line(head) + rule('=');
    for (const auto& r : rows) out += line(r);
    for (const auto& n : notes) out += wide(n);
    return out + rule('-');
}

std::vector<const Card*> cards_of(const Host& h, std::optional<std::uint32_t> card) {
    std::vector<const Card*> out;
    for (const auto& c : h.cards)
        if (!card || c.index == *card) out.push_back(&c);
    return out;
}

std::string list_profiles(const Host& h, std::optional<std::uint32_t> card) {
    std::vector<Row> rows;
    std::vector<std::string> notes;
    for (const auto* c : cards_of(h, card)) {
        const auto ps = profiles_of(h, *c);
        if (ps.empty()) notes.push_back("GCU " + std::to_string(c->index) + ": DRS not supported");
        for (const auto* p : ps)
            rows.push_back({std::to_string(c->index), p->name, std::to_string(p->id),
                            std::to_string(p->max_instances), std::to_string(p->memory_mib) + "MiB",
                            std::to_string(sips(h, *c, *p))});
    }
    return table("DRS Profiles", {"GCU", "Name", "Profile ID", "Instances", "Memory", "SIP"}, rows,
                 rows.empty() ? notes : std::vector<std::string>{});
}

std::string list_instances(const Host& h, const DrsState& st, std::optional<std::uint32_t> card) {
    const bool uuid_layout = h.faults.drs_instance_layout == "uuid";
    std::vector<const Instance*> mine;
    std::vector<std::string> notes;
    for (const auto* c : cards_of(h, card)) {
        if (std::find(st.disabled.begin(), st.disabled.end(), c->index) != st.disabled.end())
            notes.push_back("GCU " + std::to_string(c->index) + ": DRS is off");
        for (const auto& i : st.instances)
            if (i.card == c->index) mine.push_back(&i);
    }
    std::sort(mine.begin(), mine.end(), [](const Instance* a, const Instance* b) {
        return std::pair(a->card, a->instance_id) < std::pair(b->card, b->instance_id);
    });
    std::vector<Row> rows;
    for (const auto* i : mine) {
        if (uuid_layout) {
            rows.push_back(
                {std::to_string(i->card), i->profile, std::to_string(i->instance_id), i->uuid});
        } else {
            const Profile* p = profile_named(h, *card_at(h, i->card), i->profile);
            rows.push_back({std::to_string(i->card), i->profile, p ? std::to_string(p->id) : "-",
                            std::to_string(i->instance_id), i->placement});
        }
    }
    if (rows.empty() && notes.empty()) notes.push_back("No DRS instance found");
    const Row head = uuid_layout ? Row{"GCU", "Name", "Instance ID", "UUID"}
                                 : Row{"GCU", "Name", "Profile ID", "Instance ID", "Placement"};
    return table("DRS Instances", head, rows, notes);
}

// ---- the state file ----

json to_json(const DrsState& st) {
    json inst = json::array();
    for (const auto& i : st.instances)
        inst.push_back({{"card", i.card},
                        {"instance_id", i.instance_id},
                        {"profile", i.profile},
                        {"uuid", i.uuid},
                        {"placement", i.placement}});
    return {{"instances", inst}, {"disabled", st.disabled}, {"created", st.created}};
}

Answer error(std::string msg) {
    return {{}, "Error: " + std::move(msg) + "\n", 1};
}

std::optional<std::uint32_t> number(const std::string& s) {
    std::uint32_t v = 0;
    auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
    if (s.empty() || ec != std::errc{} || p != s.data() + s.size()) return std::nullopt;
    return v;
}

/// Changes the state of `card` (or every card); the caller holds the lock.
Answer change(const Host& h, DrsState& st, DrsOp op, std::optional<std::uint32_t> card,
              const std::string& arg) {
    const std::string where = card ? "GCU " + std::to_string(*card) : "";
    auto off = [&](std::uint32_t c) {
        return std::find(st.disabled.begin(), st.disabled.end(), c) != st.disabled.end();
    };
    if (op == DrsOp::On || op == DrsOp::Off) {
        std::string out;
        for (const auto* c : cards_of(h, card)) {
            const std::string name = "GCU " + std::to_string(c->index);
            if (profiles_of(h, *c).empty()) {
                if (card) return error(name + " does not support DRS");
                continue;
            }
            if (op == DrsOp::Off) {
                const bool busy =
                    std::any_of(st.instances.begin(), st.instances.end(),
                                [&](const Instance& i) { return i.card == c->index; });
                if (busy) return error(name + " has DRS instances: destroy them first");
                if (!off(c->index)) st.disabled.push_back(c->index);
            } else {
                std::erase(st.disabled, c->index);
            }
            out += "DRS is " + std::string(op == DrsOp::On ? "on" : "off") + " on " + name + "\n";
        }
        return {out, {}, 0};
    }
    if (!card) return error("--create-instance and --destroy-instance need -i <card>");
    const Card& c = *card_at(h, *card);
    if (profiles_of(h, c).empty()) return error(where + " does not support DRS");
    if (off(*card))
        return error("DRS is off on " + where + " (efsmi -i " + std::to_string(*card) +
                     " --drs on)");
    const auto id = number(arg);
    if (op == DrsOp::Destroy) {
        auto it = std::find_if(st.instances.begin(), st.instances.end(), [&](const Instance& i) {
            return id && i.card == *card && i.instance_id == *id;
        });
        if (it == st.instances.end()) return error("no DRS instance '" + arg + "' on " + where);
        st.instances.erase(it);
        return {"Destroyed DRS instance " + arg + " on " + where + "\n", {}, 0};
    }
    const auto ps = profiles_of(h, c);
    const auto p =
        std::find_if(ps.begin(), ps.end(), [&](const Profile* q) { return id && q->id == *id; });
    if (p == ps.end()) return error("unknown DRS profile id '" + arg + "' on " + where);
    const auto count = std::count_if(
        st.instances.begin(), st.instances.end(),
        [&](const Instance& i) { return i.card == *card && i.profile == (*p)->name; });
    if (static_cast<std::uint32_t>(count) >= (*p)->max_instances)
        return error("too many instances: " + where + " has " + std::to_string(count) + " of " +
                     std::to_string((*p)->max_instances) + " '" + (*p)->name + "' instances");
    const std::uint32_t n = slices(h, c, (*p)->name);
    const auto start = first_fit(h, c, st.instances, n);
    if (!start)
        return error("too many instances: " + std::to_string(n) + " free slice(s) needed on " +
                     where);
    Instance in{*card, 0, (*p)->name, {}, std::to_string(*start) + ":" + std::to_string(n)};
    while (std::any_of(st.instances.begin(), st.instances.end(), [&](const Instance& i) {
        return i.card == *card && i.instance_id == in.instance_id;
    }))
        ++in.instance_id;
    char uuid[40];
    std::snprintf(uuid, sizeof uuid, "4c1e9a52-%04x-4000-9000-%012llx", *card & 0xffffU,
                  static_cast<unsigned long long>(++st.created));
    in.uuid = uuid;
    st.instances.push_back(in);
    return {"Created DRS instance " + std::to_string(in.instance_id) + " (" + in.profile + ") on " +
                where + "\n",
            {},
            0};
}

}  // namespace

std::uint32_t drs_capacity(const Host& h, const Card& c) {
    std::uint32_t cap = 0;
    for (const auto* p : profiles_of(h, c))
        if (auto g = g_of(p->name)) cap = std::max(cap, *g * p->max_instances);
    return cap == 0 ? 1 : cap;
}

std::string place_instances(const Host& h, std::vector<Instance>& instances) {
    for (auto& i : instances) {
        if (!i.placement.empty()) continue;
        const Card* c = card_at(h, i.card);
        if (c == nullptr) continue;
        const std::uint32_t n = slices(h, *c, i.profile);
        const auto start = first_fit(h, *c, instances, n);
        if (!start)
            return "instance " + std::to_string(i.instance_id) + " (" + i.profile +
                   ") does not fit on card " + std::to_string(i.card) + ": " +
                   std::to_string(drs_capacity(h, *c)) + " slices in all";
        i.placement = std::to_string(*start) + ":" + std::to_string(n);
    }
    return {};
}

DrsState drs_state(const Host& h, const std::string& dir) {
    DrsState st;
    std::ifstream in(dir + "/" + std::string(kDrsStateFile));
    if (in) {
        std::stringstream ss;
        ss << in.rdbuf();
        const json j = json::parse(ss.str());
        for (const auto& i : j.at("instances"))
            st.instances.push_back(
                {i.at("card").get<std::uint32_t>(), i.at("instance_id").get<std::uint32_t>(),
                 i.at("profile").get<std::string>(), i.at("uuid").get<std::string>(),
                 i.at("placement").get<std::string>()});
        j.at("disabled").get_to(st.disabled);
        j.at("created").get_to(st.created);
        return st;
    }
    st.instances = h.instances;
    (void)place_instances(h, st.instances);  // the builder checked that they fit
    return st;
}

Answer efsmi_drs(const Host& h, const std::string& dir, DrsOp op, std::optional<std::uint32_t> card,
                 const std::string& arg) {
    if (card && card_at(h, *card) == nullptr)
        return error("invalid card index " + std::to_string(*card));
    if (op == DrsOp::ListProfiles) return {list_profiles(h, card), {}, 0};
    if (op == DrsOp::ListInstances) return {list_instances(h, drs_state(h, dir), card), {}, 0};
    // Read, change and write under one lock, so two runs at once do not lose a change.
    const std::string lock_path = dir + "/" + std::string(kDrsStateFile) + ".lock";
    const int lock = ::open(lock_path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644);
    if (lock < 0 || ::flock(lock, LOCK_EX) != 0) {
        if (lock >= 0) ::close(lock);
        return error("cannot lock '" + lock_path + "'");
    }
    DrsState st = drs_state(h, dir);
    Answer a = change(h, st, op, card, arg);
    if (a.code == 0) {
        if (auto e = write_file_atomic(dir + "/" + std::string(kDrsStateFile),
                                       to_json(st).dump(2) + "\n");
            !e.empty())
            a = error(e);
    }
    ::close(lock);
    return a;
}

}  // namespace sim
