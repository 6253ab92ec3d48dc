// SPDX-License-Identifier: Apache-2.0
// The informer (k8s/reflector.hpp) against fake_apiserver.py: a dropped watch is
// watched again from the last resourceVersion it saw, without a list (client-go's reflector);
// a watch answered 410 Gone lists again, logging one line that names the kind and the
// server's answer. operator.bats provokes the real API server's 410 (etcd compacted and
// restarted). The informer runs forever, as in the operator: here in a child process, its log
// (spdlog's default logger: stdout) on a file, stopped by its pid.
#include <gtest/gtest.h>
#include <sys/wait.h>

#include <functional>

#include "fake_apiserver.hpp"
#include "k8s/reflector.hpp"

namespace {

using namespace std::chrono_literals;
using nlohmann::json;

const std::string kSlices = "/apis/resource.k8s.io/v1/resourceslices";

/// `k8s::Informer` on ResourceSlices in a child process, killed with the object.
class InformerProcess {
public:
    InformerProcess(const k8s::api::Config& cfg, const std::string& log) {
        pid_ = ::fork();
        if (pid_ != 0) return;
        const int fd = ::open(log.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
        if (fd < 0 || ::dup2(fd, 1) < 0 || ::dup2(fd, 2) < 0) ::_exit(3);  // spdlog: stdout
        auto client = k8s::api::Client::create(cfg);
        if (!client) ::_exit(3);
        k8s::ReflectorOptions o;
        o.collection = kSlices;
        k8s::Informer inf(**client, o, "resource.k8s.io/v1", "ResourceSlice",
                          [](const k8s::Json&) {});
        inf.run();
        ::_exit(0);
    }
    ~InformerProcess() {
        if (pid_ <= 0) return;
        ::kill(pid_, SIGKILL);
        ::waitpid(pid_, nullptr, 0);
    }
    InformerProcess(const InformerProcess&) = delete;
    InformerProcess& operator=(const InformerProcess&) = delete;

private:
    pid_t pid_ = -1;
};

/// Polls `done` (the other process's traces) every 10 ms for up to 10 s.
bool eventually(const std::function<bool()>& done) {
    for (auto until = std::chrono::steady_clock::now() + 10s;
         std::chrono::steady_clock::now() < until; std::this_thread::sleep_for(10ms))
        if (done()) return true;
    return done();
}

json slice(const std::string& name) {
    return {{"apiVersion", "resource.k8s.io/v1"},
            {"kind", "ResourceSlice"},
            {"metadata", {{"name", name}}},
            {"spec",
             {{"driver", "gcu.enflame.com"},
              {"nodeName", "node-a"},
              {"pool", {{"name", "node-a"}, {"generation", 1}, {"resourceSliceCount", 1}}}}}};
}

std::size_t count(const std::string& text, const std::string& what) {
    std::size_t n = 0;
    for (auto at = text.find(what); at != std::string::npos; at = text.find(what, at + 1)) ++n;
    return n;
}

TEST(Informer, ADroppedWatchResumesFromItsLastResourceVersionA410ListsAgain) {
    k8s_test::FakeApiServer api;
    ASSERT_TRUE(api.up());
    auto client = k8s::api::Client::create(api.config());
    ASSERT_TRUE(client) << client.error().what();
    const std::string log = api.dir() + "/informer.log";
    InformerProcess informer(api.config(), log);
    auto watches = [&] { return api.json_lines("watches.jsonl"); };
    // every request is one line of tokens.log: what is not a watch (nor ours) is a list
    std::size_t ours = 0;
    auto lists = [&] { return api.tokens().size() - watches().size() - ours; };
    ASSERT_TRUE(eventually([&] { return watches().size() == 1; }));
    EXPECT_EQ(lists(), 1u);

    // a change the watch delivers, then the stream cut: the next watch starts at that change
    auto s = (*client)->create(kSlices, slice("s1"));
    ++ours;
    ASSERT_TRUE(s) << s.error().what();
    const std::string rv = (*s)["metadata"]["resourceVersion"];
    ASSERT_NE(watches()[0].value("resourceVersion", ""), rv);
    std::this_thread::sleep_for(200ms);  // the fake streams new events every 50 ms
    api.control(R"({"drop_watch": 1})");
    ASSERT_TRUE(eventually([&] { return watches().size() == 2; }));
    EXPECT_EQ(watches()[1].value("resourceVersion", ""), rv);
    EXPECT_EQ(lists(), 1u) << "a dropped watch made the informer list again";
    EXPECT_EQ(count(api.read("informer.log"), "relisting"), 0u) << api.read("informer.log");

    // the stream cut again, and the next watch answered 410 Gone: one list, one line saying why
    api.control(R"({"drop_watch": 1, "watch_gone": 1})");
    ASSERT_TRUE(eventually([&] { return watches().size() == 4; })) << api.read("informer.log");
    EXPECT_EQ(watches()[2].value("resourceVersion", ""), rv);  // the one answered 410
    EXPECT_EQ(lists(), 2u);
    const std::string text = api.read("informer.log");
    EXPECT_EQ(count(text, "relisting"), 1u) << text;
    EXPECT_NE(text.find("informer ResourceSlice: relisting: the watch from resourceVersion " + rv +
                        " answered 410 Gone: too old resource version"),
              std::string::npos)
        << text;
}

}  // namespace
