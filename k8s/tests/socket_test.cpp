// SPDX-License-Identifier: Apache-2.0
// k8s/common: serving on unix sockets, dialing them, and noticing a kubelet restart.
#include "k8s/socket.hpp"

#include <gtest/gtest.h>
#include <poll.h>
#include <sys/inotify.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <vector>

#include "k8s/proto/deviceplugin_v1beta1.grpc.pb.h"
#include "k8s/watch.hpp"
#include "temp_dir.hpp"

namespace {

using k8s_test::TempDir;

class Registration final : public v1beta1::Registration::Service {
public:
    grpc::Status Register(grpc::ServerContext*, const v1beta1::RegisterRequest* r,
                          v1beta1::Empty*) override {
        last = r->resource_name();
        return grpc::Status::OK;
    }
    std::string last;
};

// A bound unix socket file nobody listens on: what a crashed process leaves behind.
void stale_socket(const std::string& path) {
    const int fd = ::socket(AF_UNIX, SOCK_STREAM, 0);
    sockaddr_un a{};
    a.sun_family = AF_UNIX;
    std::snprintf(a.sun_path, sizeof a.sun_path, "%s", path.c_str());
    ASSERT_EQ(::bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof a), 0);
    ::close(fd);
}

TEST(Socket, ServeReplacesStaleAndIsPrivate) {
    TempDir d;
    auto path = k8s::socket_path(d.path(), "p.sock");
    ASSERT_TRUE(path) << path.error().what();
    stale_socket(*path);
    Registration svc;
    auto s = k8s::serve_unix(*path, {&svc});
    ASSERT_TRUE(s) << s.error().what();
    struct stat st {};
    ASSERT_EQ(::stat(path->c_str(), &st), 0);
    EXPECT_EQ(st.st_mode & 0777, 0600u);
    EXPECT_TRUE(k8s::still_ours(*s));

    auto ch = k8s::dial_unix(*path, std::chrono::milliseconds(5000));
    ASSERT_TRUE(ch) << ch.error().what();
    auto stub = v1beta1::Registration::NewStub(*ch);
    grpc::ClientContext ctx;
    v1beta1::RegisterRequest req;
    req.set_resource_name("enflame.com/gcu");
    v1beta1::Empty e;
    ASSERT_TRUE(stub->Register(&ctx, req, &e).ok());
    EXPECT_EQ(svc.last, "enflame.com/gcu");

    k8s::stop_unix(*s, std::chrono::milliseconds(100));
    EXPECT_FALSE(std::filesystem::exists(*path));  // stopping removes our socket
}

TEST(Socket, Refusals) {
    TempDir d;
    auto r = k8s::socket_path(d.path() + "/nope", "p.sock");
    ASSERT_FALSE(r);
    EXPECT_EQ(r.error().what(), "socket folder '" + d.path() + "/nope': No such file or directory");

    std::ofstream(d.path() + "/file") << "x";
    r = k8s::socket_path(d.path() + "/file", "p.sock");
    ASSERT_FALSE(r);
    EXPECT_EQ(r.error().what(), "socket folder '" + d.path() + "/file' is not a folder");

    const std::string longname(120, 'x');
    r = k8s::socket_path(d.path(), longname);
    ASSERT_FALSE(r);
    const std::string full = d.path() + "/" + longname;
    EXPECT_EQ(r.error().what(), "socket path '" + full + "' is " + std::to_string(full.size()) +
                                    " bytes, longer than a unix socket allows (107)");

    // Something that is not a socket is never deleted to make room.
    Registration svc;
    auto s = k8s::serve_unix(d.path() + "/file", {&svc});
    ASSERT_FALSE(s);
    EXPECT_EQ(s.error().what(), "'" + d.path() + "/file' exists and is not a socket");

    auto ch = k8s::dial_unix(d.path() + "/absent.sock", std::chrono::milliseconds(200));
    ASSERT_FALSE(ch);
    EXPECT_EQ(ch.error().what(),
              "connecting to '" + d.path() + "/absent.sock': no answer within 200 ms");
}

bool readable(int fd, int ms) {
    pollfd p{fd, POLLIN, 0};
    return ::poll(&p, 1, ms) == 1;
}

// Events lost to a queue overflow: the folder is compared with what it held. A test cannot
// overflow the queue cheaply, so it feeds the event the kernel sends.
TEST(Watch, OverflowLooksAtTheFolderAgain) {
    TempDir d;
    stale_socket(d.path() + "/kubelet.sock");
    stale_socket(d.path() + "/ours.sock");
    auto w = k8s::KubeletWatcher::create(d.path(), "kubelet.sock");
    ASSERT_TRUE(w) << w.error().what();
    std::vector<std::string> asked;
    auto ours_gone = [&](const std::string& name) {
        asked.push_back(name);
        return name == "ours.sock";
    };
    const std::vector<k8s::KubeletWatcher::Event> overflow{{-1, IN_Q_OVERFLOW, ""}};
    auto r = w->handle(overflow, ours_gone);
    ASSERT_TRUE(r) << r.error().what();
    EXPECT_FALSE(*r) << "nothing changed";
    EXPECT_TRUE(asked.empty());

    // Our socket removed, its events lost: found by the look.
    ::unlink((d.path() + "/ours.sock").c_str());
    r = w->handle(overflow, ours_gone);
    ASSERT_TRUE(r) << r.error().what();
    EXPECT_TRUE(*r);
    EXPECT_EQ(asked, std::vector<std::string>{"ours.sock"});

    // kubelet.sock made again (another inode), its events lost: a restart.
    ::unlink((d.path() + "/kubelet.sock").c_str());
    stale_socket(d.path() + "/kubelet.sock");
    r = w->handle(overflow, [](const std::string&) { return false; });
    ASSERT_TRUE(r) << r.error().what();
    EXPECT_TRUE(*r);
}

// The folder removed and made again (kubelet's state wiped): the watch is made again and
// sees the new kubelet.sock and what goes on in the new folder.
TEST(Watch, RemovedFolderIsWatchedAgainWhenItIsBack) {
    TempDir top;
    const std::string dir = top.path() + "/device-plugins";
    std::filesystem::create_directory(dir);
    stale_socket(dir + "/ours.sock");
    auto w = k8s::KubeletWatcher::create(dir, "kubelet.sock");
    ASSERT_TRUE(w) << w.error().what();
    bool gone = true;
    auto ours_gone = [&](const std::string& name) { return name == "ours.sock" && gone; };

    std::filesystem::remove_all(dir);
    ASSERT_TRUE(readable(w->fd(), 5000));
    auto r = w->restarted(ours_gone);
    ASSERT_TRUE(r) << r.error().what();
    EXPECT_FALSE(*r) << "no folder to serve into yet";

    std::filesystem::create_directory(dir);
    ASSERT_TRUE(readable(w->fd(), 5000));
    r = w->restarted(ours_gone);
    ASSERT_TRUE(r) << r.error().what();
    EXPECT_TRUE(*r) << "back, without our socket";

    // Watched again: kubelet.sock made in the new folder is a restart.
    gone = false;
    stale_socket(dir + "/kubelet.sock");
    ASSERT_TRUE(readable(w->fd(), 5000));
    r = w->restarted(ours_gone);
    ASSERT_TRUE(r) << r.error().what();
    EXPECT_TRUE(*r);
    EXPECT_FALSE(readable(w->fd(), 0));
}

TEST(Watch, KubeletRestart) {
    TempDir d;
    auto w = k8s::KubeletWatcher::create(d.path(), "kubelet.sock");
    ASSERT_TRUE(w) << w.error().what();
    bool gone = true;
    auto ours_gone = [&](const std::string& name) { return name == "ours.sock" && gone; };

    // Unrelated files, made or removed: no restart.
    std::ofstream(d.path() + "/other.sock") << "";
    ::unlink((d.path() + "/other.sock").c_str());
    ASSERT_TRUE(readable(w->fd(), 5000));
    EXPECT_FALSE(*w->restarted(ours_gone));
    EXPECT_FALSE(readable(w->fd(), 0));

    // kubelet.sock created: restart.
    stale_socket(d.path() + "/kubelet.sock");
    ASSERT_TRUE(readable(w->fd(), 5000));
    EXPECT_TRUE(*w->restarted(ours_gone));

    // Our socket removed, and the caller confirms it is gone: restart.
    stale_socket(d.path() + "/ours.sock");
    ::unlink((d.path() + "/ours.sock").c_str());
    ASSERT_TRUE(readable(w->fd(), 5000));
    EXPECT_TRUE(*w->restarted(ours_gone));

    // Our socket replaced by ourselves (the file on disk is still ours): no restart.
    stale_socket(d.path() + "/ours.sock");
    ::unlink((d.path() + "/ours.sock").c_str());
    gone = false;
    ASSERT_TRUE(readable(w->fd(), 5000));
    EXPECT_FALSE(*w->restarted(ours_gone));
}

}  // namespace
