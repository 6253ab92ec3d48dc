// SPDX-License-Identifier: Apache-2.0
// The host builder: device nodes, sysfs, the efsmi/libefml simulators and runtime libraries,
// laid out in a staging folder that replaces the root in one rename.

#include "builder.hpp"

#include <fcntl.h>
#include <stdio.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <filesystem>

#include "inject/fs.hpp"
#include "model_json.hpp"

namespace sim {

namespace {

namespace fs = std::filesystem;
using inject::Errc;
using inject::Result;

constexpr const char* kEfsmiBinary = "enflame-sim-efsmi";
constexpr const char* kEfmlLibrary = "libefml-sim.so";
// Marks a root as ours: an existing non-empty folder without it is never replaced, so a
// mistyped --root (/usr, $HOME) cannot be wiped.
constexpr const char* kMarker = ".enflame-sim-host";

// Removes the staging folder unless released.
class StagingDir {
public:
    explicit StagingDir(std::string path) : path_(std::move(path)) {}
    StagingDir(const StagingDir&) = delete;
    StagingDir& operator=(const StagingDir&) = delete;
    ~StagingDir() {
        if (path_.empty()) return;
        std::error_code ec;
        fs::remove_all(path_, ec);
    }
    [[nodiscard]] const std::string& path() const { return path_; }
    void release() { path_.clear(); }

private:
    std::string path_;
};

Result<void> make_dirs(const std::string& path) {
    std::error_code ec;
    fs::create_directories(path, ec);
    if (ec)
        return inject::fail(Errc::Io, "creating folder '" + path + "': " + ec.message(),
                            ec.value());
    return inject::ok();
}

// Writes a new file in the staging tree (the tree as a whole is swapped in atomically).
Result<void> write_new(const std::string& path, std::string_view content, mode_t mode) {
    INJECT_TRY_VOID(make_dirs(fs::path(path).parent_path().string()));
    const int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, mode);
    if (fd < 0) return inject::sys_error("creating '" + path + "'");
    const inject::fs::UniqueFd guard(fd);
    while (!content.empty()) {
        const ssize_t n = ::write(fd, content.data(), content.size());
        if (n < 0 && errno == EINTR) continue;
        if (n < 0) return inject::sys_error("writing '" + path + "'");
        content.remove_prefix(static_cast<std::size_t>(n));
    }
    if (::fchmod(fd, mode) != 0) return inject::sys_error("setting the mode of '" + path + "'");
    return inject::ok();
}

Result<void> make_symlink(const std::string& target, const std::string& link) {
    INJECT_TRY_VOID(make_dirs(fs::path(link).parent_path().string()));
    if (::symlink(target.c_str(), link.c_str()) != 0) {
        return inject::sys_error("creating symlink '" + link + "' -> '" + target + "'");
    }
    return inject::ok();
}

// `rel` ("dev/gcu0") names the node in messages: the staging folder means nothing to users.
Result<void> make_node(const std::string& root, const std::string& rel, std::uint32_t major,
                       std::uint32_t minor) {
    const std::string path = root + "/" + rel;
    INJECT_TRY_VOID(make_dirs(fs::path(path).parent_path().string()));
    if (::mknod(path.c_str(), S_IFCHR | 0666, makedev(major, minor)) != 0) {
        const int err = errno;
        if (err == EPERM) {
            return inject::fail(
                Errc::Permission,
                "creating device node '" + rel + "': operation not permitted (needs root)", err);
        }
        return inject::sys_error("creating device node '" + rel + "'", err);
    }
    if (::chmod(path.c_str(), 0666) != 0) return inject::sys_error("chmod '" + rel + "'");
    return inject::ok();
}

Result<std::string> read_binary(const std::string& path) {
    auto r = inject::fs::read_file(path, 256U << 20);
    if (!r) return inject::fail(std::move(r).error().context("reading simulator '" + path + "'"));
    return r;
}

std::string efsmi_dir(const Host& h) {
    return "/usr/local/efsmi/efsmi-" + h.driver_version;
}

Result<void> lay_devices(const Host& h, const std::string& root) {
    for (const auto& c : h.cards) {
        INJECT_TRY_VOID(make_node(root, "dev/gcu" + std::to_string(c.minor), h.major, c.minor));
    }
    return make_node(root, "dev/gcuctl", h.control_major, h.control_minor);
}

Result<void> lay_sysfs(const Host& h, const std::string& root) {
    for (const auto& c : h.cards) {
        const std::string dev = root + "/sys/bus/pci/devices/" + c.bus_id;
        const std::string node = std::to_string(h.major) + ":" + std::to_string(c.minor) + "\n";
        INJECT_TRY_VOID(write_new(
            dev + "/" + h.class_dir + "/gcu" + std::to_string(c.minor) + "/dev", node, 0444));
        INJECT_TRY_VOID(write_new(dev + "/numa_node", std::to_string(c.numa_node) + "\n", 0444));
        INJECT_TRY_VOID(write_new(dev + "/vendor", "0x1e36\n", 0444));
        INJECT_TRY_VOID(write_new(dev + "/device", "0x" + c.device_id + "\n", 0444));
    }
    return write_new(root + "/sys/module/enflame/version", h.driver_version + "\n", 0444);
}

Result<void> lay_efsmi(const Host& h, const std::string& root, const std::string& sim_dir) {
    const std::string dir = efsmi_dir(h);
    const std::string json = to_json(h).dump(2) + "\n";
    INJECT_TRY_VOID(write_new(root + dir + "/" + std::string(kDescFile), json, 0644));
    if (!h.faults.efsmi_absent) {
        INJECT_TRY(const std::string bin, read_binary(sim_dir + "/" + kEfsmiBinary));
        INJECT_TRY_VOID(write_new(root + dir + "/efsmi", bin + embedded_description(json), 0755));
        INJECT_TRY_VOID(make_symlink(dir + "/efsmi", root + "/usr/bin/efsmi"));
    }
    if (!h.faults.efml_absent) {
        INJECT_TRY(std::string lib, read_binary(sim_dir + "/" + kEfmlLibrary));
        INJECT_TRY(lib, hide_symbols(std::move(lib), h.faults.efml_missing_symbols));
        const std::string real = dir + "/lib/libefml.so.1.0.0";
        INJECT_TRY_VOID(write_new(root + real, lib + embedded_description(json), 0755));
        INJECT_TRY_VOID(make_symlink(real, root + "/usr/lib/libefml.so.1"));
        INJECT_TRY_VOID(make_symlink(real, root + "/usr/lib/libefml.so"));
    }
    return inject::ok();
}

// Runtime libraries are copies of the libefml simulator, so they are real ELF files.
Result<void> lay_libraries(const Host& h, const std::string& root, const std::string& sim_dir) {
    if (h.runtime_libraries.empty()) return inject::ok();
    INJECT_TRY(const std::string lib, read_binary(sim_dir + "/" + kEfmlLibrary));
    for (const auto& name : h.runtime_libraries) {
        INJECT_TRY_VOID(write_new(root + "/usr/lib/" + name, lib, 0755));
        for (const auto& [link, target] : library_links(name)) {
            INJECT_TRY_VOID(make_symlink(target, root + "/usr/lib/" + link));
        }
    }
    return inject::ok();
}

// Whether `root` may be (re)built: absent, an empty folder, or a folder we built before.
Result<bool> root_exists(const std::string& root) {
    struct stat st {};
    if (::lstat(root.c_str(), &st) != 0) {
        if (errno == ENOENT) return false;
        return inject::sys_error("inspecting root '" + root + "'");
    }
    if (!S_ISDIR(st.st_mode)) {
        return inject::fail(Errc::InvalidInput, "root '" + root + "' exists and is not a folder");
    }
    std::error_code ec;
    if (!fs::is_empty(root, ec) && !fs::exists(root + "/" + kMarker, ec)) {
        return inject::fail(Errc::Conflict, "root '" + root +
                                                "' is not empty and was not built by "
                                                "enflame-sim-host: refusing to replace it");
    }
    return true;
}

// Puts the staged tree at `root`: a plain rename when root is new, else an exchange.
Result<void> swap_in(const std::string& staged, const std::string& root, bool exists) {
    if (!exists) {
        if (::rename(staged.c_str(), root.c_str()) != 0) {
            return inject::sys_error("moving the new host to '" + root + "'");
        }
        return inject::ok();
    }
    if (::renameat2(AT_FDCWD, staged.c_str(), AT_FDCWD, root.c_str(), RENAME_EXCHANGE) != 0) {
        return inject::sys_error("replacing the content of root '" + root + "'");
    }
    return inject::ok();
}

}  // namespace

Result<std::string> hide_symbols(std::string elf, const std::vector<std::string>& names) {
    for (const auto& name : names) {
        const std::string from = std::string(1, '\0') + name + '\0';
        std::string to = from;
        to[1] = 'X';
        std::size_t hits = 0;
        for (auto at = elf.find(from); at != std::string::npos; at = elf.find(from, at + 1)) {
            elf.replace(at, from.size(), to);
            ++hits;
        }
        if (hits == 0) {
            return inject::fail(Errc::Internal,
                                "the libefml simulator has no symbol '" + name + "'");
        }
    }
    return elf;
}

Result<void> build_host(const Host& h, const BuildOptions& opts) {
    const fs::path root = fs::absolute(opts.root).lexically_normal();
    const std::string root_s = root.has_filename() ? root.string() : root.parent_path().string();
    if (root_s == "/") return inject::fail(Errc::InvalidInput, "refusing to build over '/'");
    INJECT_TRY(const bool exists, root_exists(root_s));
    const std::string parent = fs::path(root_s).parent_path().string();
    std::string tmpl = parent + "/." + fs::path(root_s).filename().string() + ".sim-XXXXXX";
    if (::mkdtemp(tmpl.data()) == nullptr) {
        return inject::sys_error("creating a staging folder next to '" + root_s + "'");
    }
    StagingDir staging(tmpl);
    if (::chmod(tmpl.c_str(), 0755) != 0) return inject::sys_error("chmod '" + tmpl + "'");
    INJECT_TRY_VOID(write_new(tmpl + "/" + kMarker, "built by enflame-sim-host\n", 0644));
    INJECT_TRY_VOID(lay_devices(h, tmpl));
    INJECT_TRY_VOID(lay_sysfs(h, tmpl));
    INJECT_TRY_VOID(lay_efsmi(h, tmpl, opts.sim_dir));
    INJECT_TRY_VOID(lay_libraries(h, tmpl, opts.sim_dir));
    INJECT_TRY_VOID(swap_in(tmpl, root_s, exists));
    // After an exchange the staging path holds the old content, which the guard removes;
    // after a plain rename it no longer exists and the guard has nothing to do.
    return inject::ok();
}

}  // namespace sim
