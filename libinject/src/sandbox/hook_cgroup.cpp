// SPDX-License-Identifier: Apache-2.0
// Device cgroup access for nodes a prestart hook adds. runc/crun have already applied the
// container's device rules when the hook runs, so a node we create would be unusable without an
// allow rule. When config.json's rules already allow the node (the shim puts them there) there
// is nothing to do; else on cgroup v1 it is a line in devices.allow, on cgroup v2 the runtime's
// eBPF program is extended (hook_bpf.cpp).
#include <fcntl.h>
#include <linux/magic.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include "inject/fs.hpp"
#include "inject/hook.hpp"
#include "inject/log.hpp"

namespace inject::hook {
namespace {

// The "devices" line of /proc/<pid>/cgroup ("4:devices:/user.slice/x"), or nullopt.
std::optional<std::string> devices_cgroup(const std::string& text) {
    std::size_t pos = 0;
    while (pos < text.size()) {
        std::size_t end = text.find('\n', pos);
        if (end == std::string::npos) end = text.size();
        std::string_view line(text.data() + pos, end - pos);
        pos = end + 1;
        auto c1 = line.find(':');
        auto c2 = c1 == std::string_view::npos ? c1 : line.find(':', c1 + 1);
        if (c2 == std::string_view::npos) continue;
        std::string_view ctrls = line.substr(c1 + 1, c2 - c1 - 1);
        for (std::size_t i = 0; i <= ctrls.size();) {
            std::size_t j = ctrls.find(',', i);
            if (j == std::string_view::npos) j = ctrls.size();
            if (ctrls.substr(i, j - i) == "devices") return std::string(line.substr(c2 + 1));
            i = j + 1;
        }
    }
    return std::nullopt;
}

// The cgroup2 line of /proc/<pid>/cgroup ("0::/x" -> "/x"), or nullopt.
std::optional<std::string> unified_cgroup(const std::string& text) {
    std::size_t pos = text.starts_with("0::") ? 0 : text.find("\n0::");
    if (pos == std::string::npos) return std::nullopt;
    pos += text[pos] == '\n' ? 4U : 3U;
    return text.substr(pos, text.find('\n', pos) - pos);
}

bool is_cgroup2(const std::string& dir) {
    struct statfs sfs {};
    return ::statfs(dir.c_str(), &sfs) == 0 && sfs.f_type == CGROUP2_SUPER_MAGIC;
}

// cgroup v2: the container's cgroup folder under the cgroup2 mount, its device programs extended.
Result<void> allow_v2(const std::string& text, const std::vector<DeviceRule>& wanted,
                      const std::string& cgroup_root) {
    auto cg = unified_cgroup(text);
    if (!cg)
        return fail(Errc::Unsupported,
                    "the process is in neither a v1 devices cgroup nor a cgroup2 one");
    std::string mount = cgroup_root;
    if (!is_cgroup2(mount)) mount = fs::join(cgroup_root, "/unified");
    if (!is_cgroup2(mount))
        return fail(Errc::Unsupported, "no cgroup2 filesystem at " + cgroup_root + " or " + mount);
    // The cgroup path comes from the kernel; it is still resolved inside the cgroup2 mount.
    INJECT_TRY(fs::UniqueFd root, fs::open_root(mount));
    INJECT_TRY(fs::UniqueFd dir, fs::open_in_root(root.get(), *cg, O_RDONLY | O_DIRECTORY));
    auto n = extend_device_filters(dir.get(), wanted);
    if (!n) return fail(std::move(n).error().context("cgroup " + *cg));
    log::debug("cgroup v2 {}: {} device programs extended", *cg, *n);
    return ok();
}

std::string rule_text(const cdi::DeviceNode& n, std::int64_t major, std::int64_t minor) {
    return (n.type == "b" ? std::string("b ") : std::string("c ")) + std::to_string(major) + ":" +
           std::to_string(minor) + " rw";
}

Result<std::pair<std::int64_t, std::int64_t>> numbers(const cdi::DeviceNode& n) {
    if (n.major && n.minor) return std::pair{*n.major, *n.minor};
    const std::string host = n.host_path.empty() ? n.path : n.host_path;
    struct stat st {};
    if (::stat(host.c_str(), &st) != 0) return fail(sys_error("device node " + host));
    return std::pair{static_cast<std::int64_t>(major(st.st_rdev)),
                     static_cast<std::int64_t>(minor(st.st_rdev))};
}

}  // namespace

Result<void> allow_devices(int pid, const std::vector<cdi::DeviceNode>& nodes,
                           const std::vector<DeviceRule>& rules, const std::string& cgroup_root,
                           const std::string& proc_root) {
    if (nodes.empty()) return ok();
    std::vector<DeviceRule> wanted;
    bool all_allowed = true;
    for (const auto& n : nodes) {
        INJECT_TRY(auto mm, numbers(n));
        const char type = n.type == "b" ? 'b' : 'c';
        wanted.push_back(DeviceRule{true, type, mm.first, mm.second, "rw"});
        all_allowed = all_allowed && rules_allow(rules, type, mm.first, mm.second);
    }
    if (all_allowed) {
        log::debug(
            "config.json already allows every node: the runtime programmed the device cgroup");
        return ok();
    }
    const std::string proc = fs::join(proc_root, "/" + std::to_string(pid) + "/cgroup");
    INJECT_TRY(std::string text, fs::read_file(proc, 1U << 20));
    // A devices line is listed whenever the controller is bound to a v1 hierarchy somewhere; when
    // this namespace sees a unified /sys/fs/cgroup, the runtime used v2 and its eBPF filter.
    auto cg = is_cgroup2(cgroup_root) ? std::nullopt : devices_cgroup(text);
    if (!cg) {
        auto r = allow_v2(text, wanted, cgroup_root);
        if (!r)
            return fail(std::move(r).error().context(
                "cannot allow " + nodes.front().path +
                (nodes.size() > 1 ? " and the other nodes" : "") + " on cgroup v2"));
        return ok();
    }
    // The cgroup path comes from the kernel; it is still resolved inside the devices hierarchy.
    INJECT_TRY(fs::UniqueFd root, fs::open_root(fs::join(cgroup_root, "/devices")));
    INJECT_TRY(fs::UniqueFd allow, fs::open_in_root(root.get(), *cg + "/devices.allow", O_WRONLY));
    for (const auto& n : nodes) {
        INJECT_TRY(auto mm, numbers(n));
        const std::string line = rule_text(n, mm.first, mm.second);
        if (::write(allow.get(), line.data(), line.size()) < 0)
            return fail(sys_error("allowing '" + line + "' in devices cgroup " + *cg));
        log::debug("devices cgroup {}: allowed {}", *cg, line);
    }
    return ok();
}

}  // namespace inject::hook
