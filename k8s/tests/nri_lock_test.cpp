// SPDX-License-Identifier: Apache-2.0
// enflame-nri-plugin's liveness lock as the device plugin checks it: held by another process
// (a child, as the plugin's pod is) while that process lives and holds it, free when it
// released it or died, absent when no plugin ever ran; the unsafe places refused by name: a file
// others than root may open or lock (mode, owner), another file put at the path.
#include "k8s/nri_lock.hpp"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <csignal>
#include <cstdio>
#include <fstream>

#include "temp_dir.hpp"

namespace {

using k8s_test::TempDir;

// A child process that takes the lock on `path` (releasing it again when `release` is set),
// says so on a pipe, and waits to be killed.
class Holder {
public:
    Holder(const std::string& path, bool release) {
        int p[2];
        if (::pipe(p) != 0) return;
        pid_ = ::fork();
        if (pid_ == 0) {
            ::close(p[0]);
            auto l = k8s::NriLock::create(path);
            char ok = l && l->hold() ? '1' : '0';
            if (release && l) l->release();
            (void)::write(p[1], &ok, 1);
            for (;;) ::pause();
        }
        ::close(p[1]);
        if (::read(p[0], &ok_, 1) != 1) ok_ = '0';
        ::close(p[0]);
    }
    ~Holder() { kill(); }
    [[nodiscard]] bool ready() const { return ok_ == '1'; }
    void kill() {
        if (pid_ <= 0) return;
        ::kill(pid_, SIGKILL);
        ::waitpid(pid_, nullptr, 0);
        pid_ = -1;
    }

private:
    pid_t pid_ = -1;
    char ok_ = '0';
};

TEST(NriLock, HeldWhileAProcessHoldsItFreeOnceItDies) {
    TempDir d;
    const std::string path = d.path() + "/enflame/nri-plugin.lock";
    Holder h(path, false);  // creates the folder and the file
    ASSERT_TRUE(h.ready());
    auto held = k8s::nri_lock_held(path);
    ASSERT_TRUE(held) << held.error().what();
    EXPECT_TRUE(*held);
    // Checking takes no lock: a second check still sees the holder, and the first left nothing.
    EXPECT_TRUE(*k8s::nri_lock_held(path));
    h.kill();
    held = k8s::nri_lock_held(path);
    ASSERT_TRUE(held) << held.error().what();
    EXPECT_FALSE(*held);
}

TEST(NriLock, ReleasedIsFreeTwoHoldersShare) {
    TempDir d;
    const std::string path = d.path() + "/nri-plugin.lock";
    {
        Holder gone(path, true);
        ASSERT_TRUE(gone.ready());
        EXPECT_FALSE(*k8s::nri_lock_held(path));
    }
    // a rolling update's old and new plugin pods: both hold it, one leaving keeps it held
    Holder a(path, false), b(path, false);
    ASSERT_TRUE(a.ready());
    ASSERT_TRUE(b.ready());
    a.kill();
    EXPECT_TRUE(*k8s::nri_lock_held(path));
    b.kill();
    EXPECT_FALSE(*k8s::nri_lock_held(path));
}

// A stranger's write lock does not stall the plugin: hold() refuses at once, naming the file.
TEST(NriLock, StrangersWriteLockRefusedWithoutWaiting) {
    TempDir d;
    const std::string path = d.path() + "/nri-plugin.lock";
    auto l = k8s::NriLock::create(path);
    ASSERT_TRUE(l) << l.error().what();
    const int w = ::open(path.c_str(), O_RDWR | O_CLOEXEC);
    ASSERT_GE(w, 0);
    struct flock fl {};
    fl.l_type = F_WRLCK;
    fl.l_whence = SEEK_SET;
    ASSERT_EQ(::fcntl(w, F_OFD_SETLK, &fl), 0);
    auto r = l->hold();
    ASSERT_FALSE(r);
    EXPECT_EQ(r.error().code(), inject::Errc::Conflict);
    EXPECT_EQ(r.error().what(),
              "NRI lock file '" + path + "': another process holds it for writing");
    EXPECT_FALSE(l->held());
    ::close(w);
    ASSERT_TRUE(l->hold());
    EXPECT_TRUE(*k8s::nri_lock_held(path));
}

TEST(NriLock, MissingFileOrFolderIsNoPlugin) {
    TempDir d;
    for (const std::string path :
         {d.path() + "/nri-plugin.lock", d.path() + "/none/nri-plugin.lock"}) {
        auto held = k8s::nri_lock_held(path);
        ASSERT_TRUE(held) << path << ": " << held.error().what();
        EXPECT_FALSE(*held) << path;
    }
    // the check never creates what is missing
    EXPECT_NE(::access((d.path() + "/nri-plugin.lock").c_str(), F_OK), 0);
}

TEST(NriLock, UnsafePlacesRefusedByName) {
    TempDir d;
    ASSERT_EQ(::mkdir((d.path() + "/real").c_str(), 0755), 0);
    std::ofstream(d.path() + "/real/target") << "";
    ASSERT_EQ(::symlink("target", (d.path() + "/real/link").c_str()), 0);
    ASSERT_EQ(::symlink("real", (d.path() + "/dirlink").c_str()), 0);
    ASSERT_EQ(::mkfifo((d.path() + "/real/fifo").c_str(), 0644), 0);
    ASSERT_EQ(::mkdir((d.path() + "/open").c_str(), 0755), 0);
    ASSERT_EQ(::chmod((d.path() + "/open").c_str(), 0777), 0);
    std::ofstream(d.path() + "/open/nri-plugin.lock") << "";
    const std::string p = d.path();
    struct {
        const char* name;
        std::string path;
        std::string message;
    } cases[] = {
        {"FileSymlink", p + "/real/link",
         "NRI lock file '" + p + "/real/link': a symlink, refused"},
        {"FolderSymlink", p + "/dirlink/target",
         "NRI lock folder '" + p + "/dirlink': not a directory (a symlink?), refused"},
        {"Fifo", p + "/real/fifo", "NRI lock file '" + p + "/real/fifo': not a regular file"},
        {"WorldWritable", p + "/open/nri-plugin.lock",
         "NRI lock folder '" + p + "/open': world-writable, refused"},
        {"Relative", "nri-plugin.lock",
         "NRI lock file 'nri-plugin.lock': want an absolute file path"},
    };
    for (const auto& c : cases) {
        auto held = k8s::nri_lock_held(c.path);
        ASSERT_FALSE(held) << c.name;
        EXPECT_EQ(held.error().what(), c.message) << c.name;
        auto l = k8s::NriLock::create(c.path);
        EXPECT_FALSE(l) << c.name;
    }
}

mode_t mode_of(const std::string& path) {
    struct stat st {};
    return ::stat(path.c_str(), &st) == 0 ? st.st_mode & 07777 : 0;
}

// Only root may lock it: made 0600; an older plugin's 0644 file narrowed when opened again.
TEST(NriLock, Made0600AnOlderFileNarrowed) {
    TempDir d;
    const std::string path = d.path() + "/nri-plugin.lock";
    ASSERT_TRUE(k8s::NriLock::create(path));
    EXPECT_EQ(mode_of(path), 0600u);
    ASSERT_EQ(::chmod(path.c_str(), 0644), 0);
    auto l = k8s::NriLock::create(path);
    ASSERT_TRUE(l) << l.error().what();
    EXPECT_EQ(mode_of(path), 0600u);
}

// A file anyone else may open: anyone could hold the read lock. Refused, naming file and mode.
TEST(NriLock, OpenToOthersRefusedByName) {
    TempDir d;
    const std::string path = d.path() + "/nri-plugin.lock";
    ASSERT_TRUE(k8s::NriLock::create(path));
    for (const mode_t m : {0644u, 0640u, 0620u, 0604u, 0602u}) {
        ASSERT_EQ(::chmod(path.c_str(), m), 0);
        auto held = k8s::nri_lock_held(path);
        ASSERT_FALSE(held) << std::oct << m;
        char want[8];
        std::snprintf(want, sizeof(want), "%04o", static_cast<unsigned>(m));
        EXPECT_EQ(held.error().what(), "NRI lock file '" + path + "': mode " + want +
                                           ", others than its owner may open it, refused");
    }
    ASSERT_EQ(::chmod(path.c_str(), 0700), 0);  // execute bits give no access
    EXPECT_TRUE(k8s::nri_lock_held(path));
}

TEST(NriLock, NotRootsRefusedByName) {
    if (::geteuid() != 0) GTEST_SKIP() << "chown needs root";
    TempDir d;
    const std::string path = d.path() + "/nri-plugin.lock";
    ASSERT_TRUE(k8s::NriLock::create(path));
    ASSERT_EQ(::chown(path.c_str(), 65534, 65534), 0);
    const std::string want = "NRI lock file '" + path + "': owned by uid 65534, not root, refused";
    auto held = k8s::nri_lock_held(path);
    ASSERT_FALSE(held);
    EXPECT_EQ(held.error().what(), want);
    auto l = k8s::NriLock::create(path);
    ASSERT_FALSE(l);
    EXPECT_EQ(l.error().what(), want);
}

// The checker's answer is about the file at the path: one replaced while it looked is refused.
std::string g_replace_from, g_replace_to;
TEST(NriLock, ReplacedWhileCheckedRefused) {
    TempDir d;
    const std::string path = d.path() + "/nri-plugin.lock";
    Holder h(path, false);
    ASSERT_TRUE(h.ready());
    ASSERT_TRUE(k8s::NriLock::create(d.path() + "/other.lock"));
    g_replace_from = d.path() + "/other.lock";
    g_replace_to = path;
    k8s::detail::nri_lock_checked_hook = [] {
        (void)::rename(g_replace_from.c_str(), g_replace_to.c_str());
    };
    auto held = k8s::nri_lock_held(path);
    k8s::detail::nri_lock_checked_hook = nullptr;
    ASSERT_FALSE(held);
    EXPECT_EQ(held.error().what(), "NRI lock file '" + path + "': replaced while checked, refused");
    // the new file, checked on its own: free (the holder locked the old one)
    EXPECT_FALSE(*k8s::nri_lock_held(path));
}

// The plugin's side: another file at the path (or none) is locked at its next hold().
TEST(NriLock, HoldLocksTheFileNowAtThePath) {
    TempDir d;
    const std::string path = d.path() + "/nri-plugin.lock";
    auto l = k8s::NriLock::create(path);
    ASSERT_TRUE(l) << l.error().what();
    ASSERT_TRUE(l->hold());
    ASSERT_TRUE(k8s::NriLock::create(d.path() + "/new.lock"));
    ASSERT_EQ(::rename((d.path() + "/new.lock").c_str(), path.c_str()), 0);
    EXPECT_FALSE(*k8s::nri_lock_held(path));
    ASSERT_TRUE(l->hold());
    EXPECT_TRUE(*k8s::nri_lock_held(path));
    ASSERT_EQ(::unlink(path.c_str()), 0);
    ASSERT_TRUE(l->hold());
    EXPECT_TRUE(*k8s::nri_lock_held(path));
    EXPECT_EQ(mode_of(path), 0600u);
}

}  // namespace
