// SPDX-License-Identifier: Apache-2.0
// Device cgroup access for nodes a prestart hook adds. runc/crun have already applied the
// container's device rules when the hook runs, so a node we create would be unusable without an
// allow rule. On cgroup v1 that is a line in devices.allow; on cgroup v2 the runtime attached an
// eBPF program we cannot extend, so we refuse unless config.json's rules already allow the node.
#include "inject/fs.hpp"
#include "inject/hook.hpp"
#include "inject/log.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

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

std::string rule_text(const cdi::DeviceNode& n, std::int64_t major, std::int64_t minor) {
    return (n.type == "b" ? std::string("b ") : std::string("c ")) + std::to_string(major) + ":" + std::to_string(minor) + " rw";
}

Result<std::pair<std::int64_t, std::int64_t>> numbers(const cdi::DeviceNode& n) {
    if (n.major && n.minor) return std::pair{*n.major, *n.minor};
    const std::string host = n.host_path.empty() ? n.path : n.host_path;
    struct stat st {};
    if (::stat(host.c_str(), &st) != 0) return fail(sys_error("device node " + host));
    return std::pair{static_cast<std::int64_t>(major(st.st_rdev)), static_cast<std::int64_t>(minor(st.st_rdev))};
}

}  // namespace

Result<void> allow_devices(int pid, const std::vector<cdi::DeviceNode>& nodes, const std::vector<DeviceRule>& rules,
                           const std::string& cgroup_root, const std::string& proc_root) {
    if (nodes.empty()) return ok();
    const std::string proc = fs::join(proc_root, "/" + std::to_string(pid) + "/cgroup");
    INJECT_TRY(std::string text, fs::read_file(proc, 1U << 20));
    auto cg = devices_cgroup(text);
    if (!cg) {
        for (const auto& n : nodes) {
            INJECT_TRY(auto mm, numbers(n));
            if (!rules_allow(rules, n.type == "b" ? 'b' : 'c', mm.first, mm.second))
                return fail(Errc::Unsupported,
                            "cannot allow " + n.path + " (" + rule_text(n, mm.first, mm.second) +
                                ") on cgroup v2: the runtime controls device access with eBPF; add it to "
                                "linux.resources.devices (the runtime shim or CDI mode does)");
        }
        log::debug("cgroup v2: config.json already allows every node");
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
