// SPDX-License-Identifier: Apache-2.0
// Turning what a backend reported into confirmed devices: the minor from libefml or sysfs
// (efsmi does not print it), NUMA node from sysfs, and the node under dev-root checked to be
// the character device sysfs names. Everything is opened through in-root resolution on fds,
// so a symlink in a (containerised) driver root can never point us at the real host.
#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include <algorithm>
#include <map>

#include "device/backends.hpp"
#include "device/text_util.hpp"
#include "inject/fs.hpp"
#include "inject/log.hpp"

namespace inject::discover::detail {
namespace {

struct DevNum {
    std::uint32_t major = 0, minor = 0;
};

// A small file under `root_fd` (sysfs attributes are a few bytes).
Result<std::string> read_small(int root_fd, const std::string& rel) {
    INJECT_TRY(fs::UniqueFd fd, fs::open_in_root(root_fd, rel, O_RDONLY));
    char buf[256];
    std::string out;
    for (;;) {
        ssize_t n = ::read(fd.get(), buf, sizeof buf);
        if (n < 0 && errno == EINTR) continue;
        if (n < 0) return fail(sys_error("reading " + rel));
        if (n == 0) break;
        out.append(buf, static_cast<std::size_t>(n));
        if (out.size() > 4096) return fail(Errc::InvalidInput, "'" + rel + "' is too large");
    }
    return out;
}

std::optional<DevNum> parse_devnum(std::string_view s) {
    s = trim(s);
    const auto colon = s.find(':');
    if (colon == std::string_view::npos) return std::nullopt;
    auto ma = parse_u32(s.substr(0, colon));
    auto mi = parse_u32(s.substr(colon + 1));
    if (!ma || !mi) return std::nullopt;
    return DevNum{*ma, *mi};
}

// sys/bus/pci/devices/<BDF>/{enflame,zixiao}/<prefix>N/dev -> "major:minor".
Result<std::optional<DevNum>> sysfs_devnum(const Options& opts, int root_fd,
                                           const std::string& bdf) {
    for (const char* cls : {"enflame", "zixiao"}) {
        const std::string dir = "sys/bus/pci/devices/" + bdf + "/" + cls;
        auto dfd = fs::open_in_root(root_fd, dir, O_RDONLY | O_DIRECTORY);
        if (!dfd) continue;
        DIR* d = ::fdopendir(dfd->get());
        if (!d) return fail(sys_error("listing " + fs::join(opts.driver_root, "/" + dir)));
        dfd->release();
        std::vector<std::string> names;
        while (dirent* e = ::readdir(d)) {
            const std::string_view n = e->d_name;
            if (n.starts_with(opts.device_prefix) || n.starts_with("gcu")) names.emplace_back(n);
        }
        ::closedir(d);
        std::sort(names.begin(), names.end());
        for (const auto& n : names) {
            auto text = read_small(root_fd, dir + "/" + n + "/dev");
            if (!text) continue;
            auto num = parse_devnum(*text);
            if (!num)
                return fail(Errc::InvalidInput,
                            "'" + fs::join(opts.driver_root, "/" + dir + "/" + n + "/dev") +
                                "': bad device number " + quote(trim(*text)));
            return std::optional<DevNum>(*num);
        }
    }
    return std::optional<DevNum>();
}

// lstat of dev/<name> under dev-root, as a DeviceNode. `want` is what sysfs says it must be.
Result<std::optional<device::DeviceNode>> stat_node(const Options& opts, int dev_fd,
                                                    const std::string& name,
                                                    std::optional<DevNum> want) {
    const std::string host = fs::join(opts.dev_root, "/dev/" + name);
    auto fd = fs::open_in_root(dev_fd, "dev/" + name, O_PATH | O_NOFOLLOW);
    if (!fd) {
        if (fd.error().code() == Errc::NotFound) return std::optional<device::DeviceNode>();
        return fail(std::move(fd).error());
    }
    struct stat st {};
    if (::fstat(fd->get(), &st) != 0) return fail(sys_error("stat " + host));
    if (!S_ISCHR(st.st_mode))
        return fail(Errc::InvalidInput, "'" + host + "' is not a character device");
    device::DeviceNode node;
    node.path = "/dev/" + name;
    node.host_path = host;
    node.major = ::major(st.st_rdev);
    node.minor = ::minor(st.st_rdev);
    node.mode = st.st_mode & 07777;
    node.uid = st.st_uid;
    node.gid = st.st_gid;
    if (want && (want->major != node.major || want->minor != node.minor))
        return fail(Errc::Conflict, "'" + host + "' is " + std::to_string(node.major) + ":" +
                                        std::to_string(node.minor) + ", sysfs says " +
                                        std::to_string(want->major) + ":" +
                                        std::to_string(want->minor));
    return std::optional<device::DeviceNode>(std::move(node));
}

Result<device::Device> confirm_card(const Options& opts, int drv_fd, int dev_fd, RawCard raw) {
    std::optional<DevNum> sys;
    if (!raw.pci_bus_id.empty()) {
        INJECT_TRY(sys, sysfs_devnum(opts, drv_fd, raw.pci_bus_id));
    }
    if (sys && raw.minor && *raw.minor != sys->minor)
        return fail(Errc::Conflict, "libefml says minor " + std::to_string(*raw.minor) +
                                        ", sysfs says " + std::to_string(sys->minor));
    std::uint32_t minor = 0;
    if (raw.minor)
        minor = *raw.minor;
    else if (sys)
        minor = sys->minor;
    else if (raw.pci_bus_id.empty())
        return fail(Errc::NotFound,
                    "no device minor: the backend gives neither the minor nor the bus id");
    else
        return fail(Errc::NotFound,
                    "no device minor: no enflame/ or zixiao/ entry under '" +
                        fs::join(opts.driver_root, "/sys/bus/pci/devices/" + raw.pci_bus_id) + "'");
    if (raw.numa_node < 0 && !raw.pci_bus_id.empty()) {
        if (auto t = read_small(drv_fd, "sys/bus/pci/devices/" + raw.pci_bus_id + "/numa_node")) {
            std::int32_t n = -1;
            const auto s = trim(*t);
            if (auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), n);
                ec == std::errc{} && n >= 0)
                raw.numa_node = n;
        }
    }
    const std::string name = opts.device_prefix + std::to_string(minor);
    INJECT_TRY(auto node, stat_node(opts, dev_fd, name, sys ? sys : std::optional<DevNum>()));
    if (!node)
        return fail(Errc::NotFound,
                    "device node '" + fs::join(opts.dev_root, "/dev/" + name) + "' is missing");
    if (!sys && node->minor != minor)
        return fail(Errc::Conflict, "'" + node->host_path + "' has minor " +
                                        std::to_string(node->minor) + ", the backend says " +
                                        std::to_string(minor));

    device::Device d;
    d.index = raw.index;
    d.minor = minor;
    d.uuid = std::move(raw.uuid);
    d.serial = std::move(raw.serial);
    d.product = std::move(raw.product);
    const auto info = device::product_info(d.product);
    d.architecture = info.architecture;
    d.family = info.family;
    d.memory_bytes = raw.memory_bytes;
    d.pci_bus_id = std::move(raw.pci_bus_id);
    d.pci_device_id = std::move(raw.pci_device_id);
    d.numa_node = raw.numa_node;
    d.healthy = raw.healthy;
    d.driver_version = std::move(raw.driver_version);
    d.node = std::move(*node);
    return d;
}

Result<void> check_unique(const std::vector<device::Device>& devs) {
    std::map<std::uint32_t, std::uint32_t> minors;  // minor -> index
    std::map<std::string, std::uint32_t> uuids;
    for (const auto& d : devs) {
        if (auto [it, fresh] = minors.emplace(d.minor, d.index); !fresh)
            return fail(Errc::Conflict, "cards " + std::to_string(it->second) + " and " +
                                            std::to_string(d.index) + " both have minor " +
                                            std::to_string(d.minor));
        if (d.uuid.empty()) continue;
        if (auto [it, fresh] = uuids.emplace(d.uuid, d.index); !fresh)
            return fail(Errc::Conflict, "cards " + std::to_string(it->second) + " and " +
                                            std::to_string(d.index) + " both have uuid '" + d.uuid +
                                            "'");
    }
    return ok();
}

}  // namespace

Result<device::Host> confirm(const Options& opts, Report report) {
    INJECT_TRY(fs::UniqueFd drv_fd, fs::open_root(opts.driver_root));
    INJECT_TRY(fs::UniqueFd dev_fd, fs::open_root(opts.dev_root));
    device::Host host;
    host.driver_version = report.driver_version;
    if (host.driver_version.empty()) {
        if (auto v = read_small(drv_fd.get(), "sys/module/enflame/version"))
            host.driver_version = trim(*v);
    }
    std::sort(report.cards.begin(), report.cards.end(),
              [](const RawCard& a, const RawCard& b) { return a.index < b.index; });
    for (auto& raw : report.cards) {
        const std::string what = "card " + std::to_string(raw.index) +
                                 (raw.pci_bus_id.empty() ? "" : " (" + raw.pci_bus_id + ")");
        auto dev = confirm_card(opts, drv_fd.get(), dev_fd.get(), std::move(raw));
        if (!dev) return fail(std::move(dev).error().context(what));
        if (dev->driver_version.empty()) dev->driver_version = host.driver_version;
        host.devices.push_back(std::move(*dev));
    }
    INJECT_TRY_VOID(check_unique(host.devices));
    INJECT_TRY(host.control,
               stat_node(opts, dev_fd.get(), opts.device_prefix + "ctl", std::nullopt));
    return host;
}

}  // namespace inject::discover::detail
