// SPDX-License-Identifier: Apache-2.0
// The CDI registry and resolution of device names into edits. Like the reference cache, a spec
// that does not parse or validate is skipped and reported, never fatal: one broken file in
// /etc/cdi must not stop every container that asks for another vendor's device.
#include <dirent.h>
#include <sys/stat.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <memory>

#include "inject/cdi_io.hpp"
#include "inject/cdi_registry.hpp"
#include "inject/fs.hpp"

namespace inject::cdi {
namespace {

// As load_spec(): a spec is a few KiB; anything past 4 MiB is not one.
constexpr std::size_t kMaxSpecBytes = 4u << 20;

bool is_spec_file(std::string_view name) {
    auto ends = [&](std::string_view suf) {
        return name.size() > suf.size() && name.substr(name.size() - suf.size()) == suf;
    };
    return ends(".yaml") || ends(".yml") || ends(".json");
}

// The regular spec files of one dir, sorted by name. A missing dir gives none.
Result<std::vector<std::string>> list_dir(const std::string& dir) {
    std::unique_ptr<DIR, int (*)(DIR*)> d(::opendir(dir.c_str()), ::closedir);
    std::vector<std::string> out;
    if (!d) {
        if (errno == ENOENT) return out;
        const int err = errno;
        return fail(Error(err == EACCES || err == EPERM ? Errc::Permission : Errc::Io,
                          "reading CDI spec dir '" + dir + "': " + std::string(std::strerror(err)),
                          err));
    }
    while (const dirent* e = ::readdir(d.get())) {
        std::string name = e->d_name;
        if (name.front() == '.' || !is_spec_file(name)) continue;
        std::string path = dir + (dir.ends_with('/') ? "" : "/") + name;
        struct stat st {};
        if (::stat(path.c_str(), &st) != 0 || !S_ISREG(st.st_mode)) continue;
        out.push_back(std::move(path));
    }
    std::sort(out.begin(), out.end());
    return out;
}

bool contains_node(const std::vector<DeviceNode>& v, const DeviceNode& n) {
    return std::any_of(v.begin(), v.end(), [&](const DeviceNode& x) { return x.path == n.path; });
}
bool contains_mount(const std::vector<Mount>& v, const Mount& m) {
    return std::any_of(v.begin(), v.end(),
                       [&](const Mount& x) { return x.container_path == m.container_path; });
}
template <typename T>
bool contains(const std::vector<T>& v, const T& x) {
    return std::find(v.begin(), v.end(), x) != v.end();
}

}  // namespace

void merge_edits(ContainerEdits& into, const ContainerEdits& from) {
    for (const auto& e : from.env)
        if (!contains(into.env, e)) into.env.push_back(e);
    for (const auto& n : from.device_nodes)
        if (!contains_node(into.device_nodes, n)) into.device_nodes.push_back(n);
    for (const auto& h : from.hooks)
        if (!contains(into.hooks, h)) into.hooks.push_back(h);
    for (const auto& m : from.mounts)
        if (!contains_mount(into.mounts, m)) into.mounts.push_back(m);
    for (auto g : from.additional_gids)
        if (!contains(into.additional_gids, g)) into.additional_gids.push_back(g);
}

Registry Registry::from_specs(std::vector<LoadedSpec> specs) {
    Registry r;
    r.specs_ = std::move(specs);
    for (std::size_t si = 0; si < r.specs_.size(); ++si) {
        const auto& ls = r.specs_[si];
        for (std::size_t di = 0; di < ls.spec.devices.size(); ++di) {
            Entry e{ls.spec.kind + "=" + ls.spec.devices[di].name, si, di, false};
            auto it = std::lower_bound(
                r.entries_.begin(), r.entries_.end(), e.qualified_name,
                [](const Entry& a, const std::string& n) { return a.qualified_name < n; });
            if (it == r.entries_.end() || it->qualified_name != e.qualified_name) {
                r.entries_.insert(it, std::move(e));
                continue;
            }
            const auto& old = r.specs_[it->spec_index];
            if (ls.dir_priority > old.dir_priority) {
                *it = std::move(e);  // a later dir overrides an earlier one
            } else if (ls.dir_priority == old.dir_priority) {
                r.conflicts_.push_back("device '" + e.qualified_name + "' is defined in '" +
                                       old.path + "' and '" + ls.path + "'");
                it->conflicted = true;
            }
        }
    }
    return r;
}

Result<Registry> Registry::load(const std::vector<std::string>& dirs) {
    std::vector<LoadedSpec> specs;
    std::vector<std::string> problems;
    for (std::size_t i = 0; i < dirs.size(); ++i) {
        INJECT_TRY(auto files, list_dir(dirs[i]));
        for (auto& path : files) {
            auto text = fs::read_file(path, kMaxSpecBytes);
            if (!text) {
                problems.push_back(
                    std::move(text).error().context("reading CDI spec '" + path + "'").what());
                continue;
            }
            auto spec = parse_spec(*text, path);
            if (!spec) {
                problems.push_back(spec.error().what());
                continue;
            }
            auto probs = validate(*spec, path);
            if (!probs.empty()) {
                for (const auto& p : probs) problems.push_back(p.text());
                continue;
            }
            auto record = read_generated_from(*text, path);
            specs.push_back(LoadedSpec{std::move(path), static_cast<int>(i), std::move(*spec),
                                       record ? std::move(*record) : std::nullopt});
        }
    }
    Registry r = from_specs(std::move(specs));
    r.problems_ = std::move(problems);
    return r;
}

std::vector<std::string> Registry::device_names() const {
    std::vector<std::string> out;
    out.reserve(entries_.size());
    for (const auto& e : entries_) out.push_back(e.qualified_name);
    return out;
}

const Registry::Entry* Registry::find(const std::string& qualified_name) const {
    auto it =
        std::lower_bound(entries_.begin(), entries_.end(), qualified_name,
                         [](const Entry& a, const std::string& n) { return a.qualified_name < n; });
    if (it == entries_.end() || it->qualified_name != qualified_name) return nullptr;
    return &*it;
}

Result<ContainerEdits> Registry::resolve(const std::vector<std::string>& qualified_names) const {
    std::vector<const Entry*> found;
    std::vector<std::size_t> spec_order;
    for (const auto& name : qualified_names) {
        INJECT_TRY(auto qn, parse_qualified_name(name));
        const Entry* e = find(qn.str());
        if (e == nullptr) return fail(Errc::NotFound, "unknown CDI device '" + name + "'");
        if (e->conflicted)
            return fail(Errc::Conflict,
                        "CDI device '" + name + "' is defined in more than one spec file");
        found.push_back(e);
        if (!contains(spec_order, e->spec_index)) spec_order.push_back(e->spec_index);
    }
    ContainerEdits out;
    for (auto si : spec_order) merge_edits(out, specs_[si].spec.edits);
    for (const Entry* e : found)
        merge_edits(out, specs_[e->spec_index].spec.devices[e->device_index].edits);
    return out;
}

Result<ContainerEdits> resolve(const Spec& spec, const std::vector<std::string>& device_names) {
    std::vector<const Device*> found;
    for (const auto& name : device_names) {
        std::string_view plain = name;
        if (is_qualified_name(name)) {
            INJECT_TRY(auto qn, parse_qualified_name(name));
            if (qn.kind() != spec.kind)
                return fail(Errc::NotFound, "unknown CDI device '" + name + "'");
            plain = std::string_view(name).substr(name.find('=') + 1);
        }
        auto it = std::find_if(spec.devices.begin(), spec.devices.end(),
                               [&](const Device& d) { return d.name == plain; });
        if (it == spec.devices.end())
            return fail(Errc::NotFound,
                        "unknown CDI device '" + spec.kind + "=" + std::string(plain) + "'");
        found.push_back(&*it);
    }
    ContainerEdits out;
    if (!found.empty()) merge_edits(out, spec.edits);
    for (const Device* d : found) merge_edits(out, d->edits);
    return out;
}

}  // namespace inject::cdi
