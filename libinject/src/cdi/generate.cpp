// SPDX-License-Identifier: Apache-2.0
// Building the CDI spec for a discovered host. Every file we mount is looked up under
// driver-root with fs::open_in_root (symlinks there are absolute and must resolve inside the
// root, as with a containerised driver); the spec then names the resolved host path.
#include <dirent.h>
#include <fcntl.h>
#include <fnmatch.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <memory>
#include <set>

#include "inject/cdi_generate.hpp"
#include "inject/cdi_validate.hpp"
#include "inject/config.hpp"
#include "inject/fs.hpp"
#include "inject/log.hpp"

namespace inject::cdi {
namespace {

const std::vector<std::string> kMountOptions = {"ro", "nosuid", "nodev", "rbind", "rprivate"};
// The hook gets this environment and nothing else (no inherited LD_PRELOAD: CVE-2025-23266).
const std::vector<std::string> kHookEnv = {"PATH=/usr/sbin:/usr/bin:/sbin:/bin"};

// `host_dev_root`: dev-root as the host sees it (empty: the node's host_path is the host's).
DeviceNode node_edit(const device::DeviceNode& n, const std::string& host_dev_root) {
    DeviceNode d;
    d.path = n.path;
    d.host_path = !host_dev_root.empty() ? fs::join(host_dev_root, n.path)
                  : n.host_path.empty()  ? n.path
                                         : n.host_path;
    d.type = "c";
    d.major = n.major;
    d.minor = n.minor;
    d.file_mode = n.mode & 07777u;
    return d;
}

std::string dir_name(const std::string& p) {
    auto s = p.rfind('/');
    return s == 0 ? "/" : p.substr(0, s);
}

// Looks up files under the driver root. `host_root`: the same root as the host sees it, which
// the spec's host paths are made from (containerd reads the spec on the host: a daemon in a pod
// sees the host's /usr/bin/efsmi as /host/usr/bin/efsmi); empty = this process's view.
class DriverRoot {
public:
    static Result<DriverRoot> open(const std::string& root, const std::string& host_root) {
        DriverRoot r;
        r.host_root_ = host_root;
        auto fd = fs::open_root(root);
        if (!fd) return fail(std::move(fd).error().context("opening driver root '" + root + "'"));
        r.fd_ = std::move(*fd);
        INJECT_TRY(r.canonical_, fs::fd_path(r.fd_.get()));
        if (r.canonical_ == "/") r.canonical_.clear();
        return r;
    }

    // The host path a container path resolves to inside the root, and its container-side
    // real path; nullopt when it does not exist or is not a regular file.
    struct Found {
        std::string host;  // canonical host path (under host_root when that is set)
        std::string real;  // the same file as a path inside the root
    };
    Result<std::optional<Found>> regular_file(const std::string& path) const {
        auto fd = fs::open_in_root(fd_.get(), path, O_PATH);
        if (!fd) {
            const int e = fd.error().sys_errno();
            if (e == ENOENT || e == ENOTDIR || e == ELOOP) return std::optional<Found>();
            return fail(std::move(fd).error().context("looking up '" + path + "' in driver root"));
        }
        struct stat st {};
        if (::fstat(fd->get(), &st) != 0 || !S_ISREG(st.st_mode)) return std::optional<Found>();
        INJECT_TRY(auto host, fs::fd_path(fd->get()));
        std::string real = host;
        if (!canonical_.empty()) {
            if (!real.starts_with(canonical_ + "/"))
                return fail(Errc::Internal, "'" + host + "' is outside the driver root");
            real = real.substr(canonical_.size());
        }
        if (!host_root_.empty()) host = fs::join(host_root_, real);
        return std::optional<Found>(Found{std::move(host), std::move(real)});
    }

    // Names in a folder inside the root matching any pattern, sorted; none if it is missing.
    Result<std::vector<std::string>> matching(const std::string& dir,
                                              const std::vector<std::string>& patterns) const {
        std::vector<std::string> out;
        auto fd = fs::open_in_root(fd_.get(), dir, O_RDONLY | O_DIRECTORY);
        if (!fd) {
            const int e = fd.error().sys_errno();
            if (e == ENOENT || e == ENOTDIR || e == ELOOP) return out;
            return fail(std::move(fd).error().context("listing '" + dir + "' in driver root"));
        }
        std::unique_ptr<DIR, int (*)(DIR*)> d(::fdopendir(fd->get()), ::closedir);
        if (!d) return fail(sys_error("listing '" + dir + "' in driver root"));
        fd->release();
        while (const dirent* e = ::readdir(d.get())) {
            for (const auto& p : patterns) {
                if (::fnmatch(p.c_str(), e->d_name, FNM_PERIOD) == 0) {
                    out.emplace_back(e->d_name);
                    break;
                }
            }
        }
        std::sort(out.begin(), out.end());
        return out;
    }

private:
    fs::UniqueFd fd_;
    std::string canonical_;
    std::string host_root_;
};

// Mounts of one file at its own name and, when that name is a symlink, at the real path too.
void add_file_mounts(std::vector<Mount>& mounts, const std::string& container_path,
                     const std::string& host, const std::string& real) {
    auto add = [&](const std::string& cpath) {
        if (std::any_of(mounts.begin(), mounts.end(),
                        [&](const Mount& m) { return m.container_path == cpath; }))
            return;
        mounts.push_back(Mount{host, cpath, "", kMountOptions});
    };
    add(container_path);
    if (real != container_path) add(real);
}

Result<void> library_mounts(const DriverRoot& root, const GenerateOptions& opts,
                            const std::vector<std::string>& patterns, std::vector<Mount>& mounts,
                            std::vector<std::string>& folders) {
    for (const auto& dir : opts.library_search_paths) {
        INJECT_TRY(auto names, root.matching(dir, patterns));
        for (const auto& name : names) {
            const std::string cpath = (dir.ends_with('/') ? dir : dir + "/") + name;
            INJECT_TRY(auto found, root.regular_file(cpath));
            if (!found) continue;
            add_file_mounts(mounts, cpath, found->host, found->real);
            for (const auto& f : {dir_name(cpath), dir_name(found->real)})
                if (std::find(folders.begin(), folders.end(), f) == folders.end())
                    folders.push_back(f);
        }
    }
    return ok();
}

Result<ContainerEdits> spec_edits(const device::Host& host, const GenerateOptions& opts) {
    ContainerEdits e;
    e.env.push_back("ENFLAME_VISIBLE_DEVICES=void");
    if (host.control) e.device_nodes.push_back(node_edit(*host.control, opts.host_dev_root));

    INJECT_TRY(auto root, DriverRoot::open(opts.driver_root, opts.host_driver_root));
    std::vector<Mount> mounts;
    std::vector<std::string> folders;
    if (opts.capabilities & kCapUtility) {
        for (const auto& p : opts.efsmi_paths) {
            INJECT_TRY(auto found, root.regular_file(p));
            if (!found) continue;
            add_file_mounts(mounts, p, found->host, found->real);
            break;
        }
        INJECT_TRY_VOID(library_mounts(root, opts, {"libefml.so*"}, mounts, folders));
    }
    if (opts.capabilities & kCapCompute)
        INJECT_TRY_VOID(library_mounts(root, opts, opts.compute_libraries, mounts, folders));
    std::sort(mounts.begin(), mounts.end(),
              [](const Mount& a, const Mount& b) { return a.container_path < b.container_path; });
    e.mounts = std::move(mounts);

    if (!opts.ctk_path.empty() && !folders.empty()) {
        std::sort(folders.begin(), folders.end());
        Hook h;
        h.hook_name = "createContainer";
        h.path = opts.ctk_path;
        h.args = {"enflame-ctk", "hook", "update-ldcache"};
        for (const auto& f : folders) {
            h.args.emplace_back("--folder");
            h.args.push_back(f);
        }
        if (!opts.ldconfig.empty()) {
            h.args.emplace_back("--ldconfig-path");
            h.args.push_back(opts.ldconfig);
        }
        h.env = kHookEnv;
        e.hooks.push_back(std::move(h));
    }
    return e;
}

Result<void> check_name(const std::string& name, const std::string& what) {
    if (auto e = check_device_name(name); !e.empty())
        return fail(Errc::InvalidInput, what + ": " + e);
    return ok();
}

}  // namespace

std::string_view name_strategy_name(NameStrategy s) noexcept {
    switch (s) {
        case NameStrategy::Index:
            return "index";
        case NameStrategy::Uuid:
            return "uuid";
        case NameStrategy::Both:
            return "both";
    }
    return "both";
}

Result<NameStrategy> parse_name_strategy(std::string_view name) {
    if (name == "index") return NameStrategy::Index;
    if (name == "uuid") return NameStrategy::Uuid;
    if (name == "both") return NameStrategy::Both;
    return fail(Errc::InvalidInput, "unknown device name strategy '" + std::string(name) +
                                        "': want index, uuid or both");
}

Result<GenerateOptions> options_from(const config::Config& cfg) {
    GenerateOptions o;
    const auto& kind = cfg.runtime.cdi_kind;
    const auto slash = kind.find('/');
    if (slash == std::string::npos)
        return fail(Errc::InvalidInput,
                    cfg.source + ": cdi-kind '" + kind + "' is not vendor/class");
    o.vendor = kind.substr(0, slash);
    o.cls = kind.substr(slash + 1);
    o.driver_root = cfg.cli.driver_root;
    o.dev_root = cfg.cli.dev_root;
    o.host_driver_root = cfg.cli.host_driver_root;
    o.host_dev_root = cfg.cli.host_dev_root;
    o.library_search_paths = cfg.cli.library_search_paths;
    o.compute_libraries = cfg.cli.compute_libraries;
    return o;
}

Result<Spec> generate(const device::Host& host, const GenerateOptions& opts) {
    if (host.devices.empty())
        return fail(Errc::NotFound, "no Enflame cards found: nothing to generate");
    if (auto e = check_vendor(opts.vendor); !e.empty()) return fail(Errc::InvalidInput, e);
    if (auto e = check_class(opts.cls); !e.empty()) return fail(Errc::InvalidInput, e);

    Spec spec;
    spec.kind = opts.vendor + "/" + opts.cls;
    const bool by_index = opts.names != NameStrategy::Uuid;
    const bool by_uuid = opts.names != NameStrategy::Index;
    std::set<std::string> names;
    auto add = [&](std::string name, ContainerEdits edits) -> Result<void> {
        INJECT_TRY_VOID(check_name(name, "cannot name a CDI device after '" + name + "'"));
        if (!names.insert(name).second)
            return fail(Errc::Conflict, "two devices would be named '" + name + "'");
        spec.devices.push_back(Device{std::move(name), {}, std::move(edits)});
        return ok();
    };

    for (const auto& d : host.devices) {
        ContainerEdits e;
        e.device_nodes.push_back(node_edit(d.node, opts.host_dev_root));
        if (by_index) INJECT_TRY_VOID(add(std::to_string(d.index), e));
        if (by_uuid) {
            if (d.uuid.empty())
                return fail(Errc::InvalidInput,
                            "card " + std::to_string(d.index) + " has no UUID to name it by");
            INJECT_TRY_VOID(add(d.uuid, e));
        }
    }
    for (const auto& d : host.devices) {
        for (const auto& inst : d.drs_instances) {
            // An instance without a UUID (newer efsmi) is named <card>:<profile>:<id> either way.
            ContainerEdits e;
            e.env.push_back("TOPS_VISIBLE_DEVICES=" + device::drs_address(inst));
            e.device_nodes.push_back(node_edit(d.node, opts.host_dev_root));
            if (by_index || inst.uuid.empty()) INJECT_TRY_VOID(add(device::drs_name(inst), e));
            if (by_uuid && !inst.uuid.empty()) INJECT_TRY_VOID(add("DRS-" + inst.uuid, e));
        }
    }
    if (opts.all_device) {
        ContainerEdits e;
        for (const auto& d : host.devices)
            e.device_nodes.push_back(node_edit(d.node, opts.host_dev_root));
        INJECT_TRY_VOID(add("all", std::move(e)));
    }
    INJECT_TRY(spec.edits, spec_edits(host, opts));
    spec.version = minimum_version(spec);
    return spec;
}

}  // namespace inject::cdi
