// SPDX-License-Identifier: Apache-2.0
#include "device-plugin/plugin.hpp"

#include <algorithm>
#include <charconv>
#include <limits>
#include <map>
#include <set>
#include <tuple>

#include "inject/fs.hpp"
#include "k8s/sharing.hpp"

namespace device_plugin {

using inject::Errc;
using inject::fail;

namespace {

constexpr std::string_view kVisibleEnv = "ENFLAME_VISIBLE_DEVICES";
constexpr std::string_view kTopsEnv = "TOPS_VISIBLE_DEVICES";
constexpr std::string_view kAnnotationPrefix = "cdi.k8s.io/enflame-device-plugin_";
constexpr std::size_t kMaxIdLength = 63;  // kubelet's limit on a device ID

// "0000:17:00.0" -> domain * 256 + bus, the distance measure for "nearest PCI bus".
std::int64_t bus_number(std::string_view bdf) {
    const auto colon1 = bdf.find(':');
    const auto colon2 = bdf.find(':', colon1 == std::string_view::npos ? 0 : colon1 + 1);
    if (colon1 == std::string_view::npos || colon2 == std::string_view::npos) return -1;
    std::uint32_t dom = 0, bus = 0;
    const auto d = bdf.substr(0, colon1);
    const auto b = bdf.substr(colon1 + 1, colon2 - colon1 - 1);
    if (std::from_chars(d.data(), d.data() + d.size(), dom, 16).ec != std::errc{}) return -1;
    if (std::from_chars(b.data(), b.data() + b.size(), bus, 16).ec != std::errc{}) return -1;
    return static_cast<std::int64_t>(dom) * 256 + bus;
}

// What a device (a card or one of its DRS instances) takes from its card; the IDs are the
// caller's.
PluginDevice from_card(const inject::device::Device& c) {
    PluginDevice d;
    d.uuid = c.uuid;
    d.index = c.index;
    d.minor = c.minor;
    d.pci_bus_id = c.pci_bus_id;
    d.numa_node = c.numa_node;
    d.healthy = c.healthy.value_or(true);
    if (!d.healthy) d.why_unhealthy = "the driver reports it unhealthy";
    d.node = c.node;
    return d;
}

}  // namespace

inject::Result<IdStrategy> parse_id_strategy(std::string_view s) {
    if (s == "uuid") return IdStrategy::Uuid;
    if (s == "index") return IdStrategy::Index;
    return fail(Errc::InvalidInput,
                "device ID strategy '" + std::string(s) + "': want uuid or index");
}

inject::Result<ListStrategies> parse_list_strategies(const std::vector<std::string>& names) {
    ListStrategies out;
    bool any = false;
    for (const auto& arg : names) {
        std::size_t start = 0;
        while (start <= arg.size()) {
            const std::size_t comma = std::min(arg.find(',', start), arg.size());
            const std::string n = arg.substr(start, comma - start);
            start = comma + 1;
            if (n == "envvar")
                out.envvar = true;
            else if (n == "cdi-cri")
                out.cdi_cri = true;
            else if (n == "cdi-annotations")
                out.cdi_annotations = true;
            else
                return fail(Errc::InvalidInput, "device list strategy '" + n +
                                                    "': want envvar, cdi-cri or cdi-annotations");
            any = true;
        }
    }
    if (!any) return fail(Errc::InvalidInput, "device list strategy: none given");
    return out;
}

inject::Result<std::vector<Resource>> make_resources(const inject::device::Host& host,
                                                     IdStrategy strategy, std::uint32_t replicas,
                                                     const std::string& resource,
                                                     const std::string& socket, bool drs) {
    inject::device::Host whole = host;
    if (drs) {
        std::erase_if(whole.devices,
                      [](const inject::device::Device& d) { return !d.drs_instances.empty(); });
    }
    std::vector<Resource> out;
    INJECT_TRY(auto cards, make_inventory(whole, strategy, replicas));
    out.push_back({resource, socket, std::move(cards)});
    if (!drs) return out;
    const std::string domain = resource.substr(0, resource.find('/'));
    std::map<std::string, Inventory> profiles;  // sorted by profile name
    for (const auto& c : host.devices) {
        for (const auto& in : c.drs_instances) {
            PluginDevice d = from_card(c);
            d.id = d.card_id = d.cdi_name = inject::device::drs_address(in);
            d.drs = true;
            if (d.id.size() > kMaxIdLength)
                return fail(Errc::InvalidInput,
                            "device ID '" + d.id + "' is longer than kubelet allows (63)");
            auto& inv = profiles[in.profile];
            inv.control = host.control;
            inv.devices.push_back(std::move(d));
        }
    }
    for (auto& [profile, inv] : profiles) {
        Resource r{domain + "/drs-" + profile, "enflame-drs-" + profile + ".sock", std::move(inv)};
        if (auto ok = k8s::check_resource_name(r.name); !ok)
            return fail(std::move(ok).error().context("DRS profile '" + profile + "'"));
        out.push_back(std::move(r));
    }
    return out;
}

const PluginDevice* Inventory::find(std::string_view id) const {
    for (const auto& d : devices) {
        if (d.id == id) return &d;
    }
    return nullptr;
}

inject::Result<Inventory> make_inventory(const inject::device::Host& host, IdStrategy strategy,
                                         std::uint32_t replicas) {
    Inventory inv;
    inv.control = host.control;
    for (const auto& c : host.devices) {
        PluginDevice d = from_card(c);
        if (strategy == IdStrategy::Uuid && c.uuid.empty())
            return fail(Errc::NotFound, "card " + std::to_string(c.index) +
                                            " has no UUID: use --device-id-strategy index");
        d.card_id = strategy == IdStrategy::Uuid ? c.uuid : std::to_string(c.index);
        d.cdi_name = c.uuid.empty() ? std::to_string(c.index) : c.uuid;
        for (std::uint32_t n = 0; n < std::max<std::uint32_t>(replicas, 1); ++n) {
            d.id = replicas > 1 ? d.card_id + "::" + std::to_string(n) : d.card_id;
            if (d.id.size() > kMaxIdLength)
                return fail(Errc::InvalidInput,
                            "device ID '" + d.id + "' is longer than kubelet allows (63)");
            if (inv.find(d.id))
                return fail(Errc::Conflict, "two cards have the device ID '" + d.id + "'");
            inv.devices.push_back(d);
        }
    }
    return inv;
}

v1beta1::ListAndWatchResponse list_response(const Inventory& inv) {
    v1beta1::ListAndWatchResponse r;
    for (const auto& d : inv.devices) {
        auto* dev = r.add_devices();
        dev->set_id(d.id);
        dev->set_health(d.healthy ? "Healthy" : "Unhealthy");
        if (d.numa_node >= 0) dev->mutable_topology()->add_nodes()->set_id(d.numa_node);
    }
    return r;
}

std::vector<std::string> preferred(const Inventory& inv, const std::vector<std::string>& available,
                                   const std::vector<std::string>& must_include, std::size_t size) {
    std::vector<std::string> out;
    std::set<std::string> taken;
    for (const auto& id : must_include) {
        if (out.size() >= size) break;
        if (taken.insert(id).second) out.push_back(id);
    }
    std::vector<const PluginDevice*> cands;
    for (const auto& id : available) {
        const auto* d = inv.find(id);
        if (d && !taken.contains(id)) {
            cands.push_back(d);
            taken.insert(id);
        }
    }
    const std::size_t need = size > out.size() ? size - out.size() : 0;
    if (need == 0 || cands.empty()) return out;

    // The NUMA node to pack on: the first must-include card's, else the node that fits the rest
    // most tightly (keeping bigger nodes whole), else the node with the most candidates.
    std::int32_t target = -1;
    const PluginDevice* anchor = out.empty() ? nullptr : inv.find(out.front());
    if (anchor) {
        target = anchor->numa_node;
    } else {
        std::map<std::int32_t, std::size_t> per_node;
        for (const auto* d : cands) ++per_node[d->numa_node];
        std::size_t best_fit = std::numeric_limits<std::size_t>::max(), most = 0;
        std::int32_t fit_node = -1, most_node = -1;
        for (const auto& [node, n] : per_node) {
            if (n >= need && n < best_fit) best_fit = n, fit_node = node;
            if (n > most) most = n, most_node = node;
        }
        target = best_fit != std::numeric_limits<std::size_t>::max() ? fit_node : most_node;
    }
    // Greedy: each step takes the candidate on the target node nearest (by PCI bus) to the
    // first card chosen; ties by bus id, so the answer is deterministic.
    // Replicas taken per card: time-sliced containers spread over cards before sharing one.
    std::map<std::string, std::size_t> used;
    for (const auto& id : out) {
        if (const auto* d = inv.find(id)) ++used[d->card_id];
    }
    while (out.size() < size && !cands.empty()) {
        const std::int64_t ref = anchor ? bus_number(anchor->pci_bus_id) : -1;
        auto key = [&](const PluginDevice* d) {
            const std::int64_t bus = bus_number(d->pci_bus_id);
            const std::int64_t dist = ref < 0 ? bus : (bus > ref ? bus - ref : ref - bus);
            const auto u = used.find(d->card_id);
            return std::tuple(d->numa_node != target, u == used.end() ? 0 : u->second, dist,
                              d->pci_bus_id, d->id);
        };
        auto best = std::min_element(
            cands.begin(), cands.end(),
            [&](const PluginDevice* a, const PluginDevice* b) { return key(a) < key(b); });
        if (!anchor) anchor = *best;
        ++used[(*best)->card_id];
        out.push_back((*best)->id);
        cands.erase(best);
    }
    return out;
}

inject::Result<v1beta1::ContainerAllocateResponse> allocate(const Inventory& inv, const Settings& s,
                                                            const std::vector<std::string>& ids) {
    if (ids.empty()) return fail(Errc::InvalidInput, "no device IDs in the request");
    std::vector<const PluginDevice*> devs;
    for (const auto& id : ids) {
        const auto* d = inv.find(id);
        if (!d)
            return fail(Errc::NotFound, "unknown device ID '" + id + "' for " + s.resource_name);
        if (!d->healthy) return fail(Errc::InvalidInput, "device '" + id + "' is unhealthy");
        // Replicas of one card give that card once.
        if (std::none_of(devs.begin(), devs.end(),
                         [&](const PluginDevice* x) { return x->card_id == d->card_id; }))
            devs.push_back(d);
    }
    v1beta1::ContainerAllocateResponse r;
    if (s.lists.envvar) {
        std::string v;
        for (const auto* d : devs) v += (v.empty() ? "" : ",") + d->card_id;
        (*r.mutable_envs())[std::string(kVisibleEnv)] = v;
        // What Enflame's gcushare sets for DRS instances (and HAMi expects); our shim sets it too.
        std::string tops;
        for (const auto* d : devs) {
            if (d->drs) tops += (tops.empty() ? "" : ",") + d->cdi_name;
        }
        if (!tops.empty()) (*r.mutable_envs())[std::string(kTopsEnv)] = tops;
    }
    for (const auto* d : devs) {
        // UUID names are the ones stable across reboots; `cdi generate` writes them.
        const std::string cdi = s.cdi_kind + "=" + d->cdi_name;
        if (s.lists.cdi_cri) r.add_cdi_devices()->set_name(cdi);
        if (s.lists.cdi_annotations) {
            // An annotation key holds letters, digits and "-_." only: a DRS instance without
            // a UUID ("0:1g.11gb:1") becomes "0_1g.11gb_1" there (the value keeps its name).
            std::string key = d->card_id;
            std::replace(key.begin(), key.end(), ':', '_');
            (*r.mutable_annotations())[std::string(kAnnotationPrefix) + key] = cdi;
        }
    }
    if (s.pass_device_specs) {
        auto add = [&](const inject::device::DeviceNode& n) {
            auto* spec = r.add_devices();
            spec->set_container_path(n.path);
            spec->set_host_path(
                s.host_dev_root.empty() ? n.host_path : inject::fs::join(s.host_dev_root, n.path));
            spec->set_permissions("rw");
        };
        std::set<std::string> seen;  // DRS instances of one card share its node
        for (const auto* d : devs) {
            if (seen.insert(d->node.path).second) add(d->node);
        }
        if (inv.control) add(*inv.control);
    }
    return r;
}

}  // namespace device_plugin
