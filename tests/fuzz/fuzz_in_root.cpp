// SPDX-License-Identifier: Apache-2.0
// In-root path resolution against a tree full of hostile symlinks: whatever the path, the
// result is inside the root or an error. The tree is built once per process.
#include <fcntl.h>
#include <unistd.h>

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <string>

#include "inject/fs.hpp"

namespace {

struct Tree {
    std::string root;
    inject::fs::UniqueFd fd;
    Tree() {
        char tmpl[] = "/tmp/ectk-fuzz-root-XXXXXX";
        root = ::mkdtemp(tmpl);
        namespace fs = std::filesystem;
        fs::create_directories(root + "/usr/lib");
        fs::create_directories(root + "/dev");
        fs::create_symlink("/", root + "/up");
        fs::create_symlink("../../../../..", root + "/usr/lib/dots");
        fs::create_symlink("/proc/self/root", root + "/magic");
        fs::create_symlink("/etc", root + "/etc");
        fs::create_symlink("a", root + "/b");
        fs::create_symlink("b", root + "/a");
        root = fs::canonical(root).string();
        fd = std::move(*inject::fs::open_root(root));
    }
    ~Tree() { std::filesystem::remove_all(root); }
};

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    static Tree tree;
    std::string path(reinterpret_cast<const char*>(data), size);
    if (path.find('\0') != std::string::npos) return 0;
    auto fd = inject::fs::open_in_root(tree.fd.get(), path, O_PATH);
    if (fd) {
        auto where = inject::fs::fd_path(fd->get());
        if (!where) __builtin_trap();
        if (*where != tree.root && where->rfind(tree.root + "/", 0) != 0) __builtin_trap();
    }
    return 0;
}
