// SPDX-License-Identifier: Apache-2.0
// One NRI connection served by nri_plugin::serve(), the runtime's side played over a socketpair
// with hand-checked messages: registration, Configure, Synchronize, CreateContainer answered and
// refused, a method we do not serve, a refused registration, the runtime closing mid-frame.
#include <gtest/gtest.h>
#include <sys/socket.h>
#include <unistd.h>

#include <future>

#include "nri/plugin.hpp"
#include "nri/proto/nri.pb.h"
#include "nri/proto/ttrpc.pb.h"
#include "nri/wire.hpp"
#include "test_util.hpp"

namespace {

namespace api = nri::pkg::api::v1alpha1;

const char* kSpec = R"(cdiVersion: "0.5.0"
kind: enflame.com/gpu
devices:
- name: "0"
  containerEdits:
    deviceNodes:
    - path: /dev/gcu0
      hostPath: /dev/null
)";

/// The runtime's end of the connection.
struct Runtime {
    int fd = -1;
    nri_plugin::Demux demux;
    std::vector<nri_plugin::Message> pending;

    nri_plugin::Message next() {
        char buf[4096];
        while (pending.empty()) {
            const ssize_t n = ::read(fd, buf, sizeof(buf));
            if (n <= 0) throw std::runtime_error("plugin closed the connection");
            if (!demux.feed(std::string_view(buf, static_cast<std::size_t>(n)), pending))
                throw std::runtime_error("bad bytes from the plugin");
        }
        auto m = std::move(pending.front());
        pending.erase(pending.begin());
        return m;
    }
    void send(std::uint32_t conn, std::uint32_t stream, std::uint8_t type,
              const std::string& body) {
        auto bytes = nri_plugin::encode(conn, stream, type, body);
        ASSERT_TRUE(bytes);
        ASSERT_EQ(::write(fd, bytes->data(), bytes->size()), static_cast<ssize_t>(bytes->size()));
    }
    /// Calls `method` on the plugin (connection 1) and returns its response.
    ::ttrpc::Response call(std::uint32_t stream, const std::string& method,
                           const google::protobuf::MessageLite& in) {
        ::ttrpc::Request r;
        r.set_service("nri.pkg.api.v1alpha1.Plugin");
        r.set_method(method);
        in.SerializeToString(r.mutable_payload());
        send(nri_plugin::kPluginConn, stream, nri_plugin::kRequest, r.SerializeAsString());
        const auto m = next();
        EXPECT_EQ(m.conn, nri_plugin::kPluginConn);
        EXPECT_EQ(m.stream, stream);
        EXPECT_EQ(m.type, nri_plugin::kResponse);
        ::ttrpc::Response resp;
        EXPECT_TRUE(resp.ParseFromString(m.body));
        return resp;
    }
    /// Reads RegisterPlugin and answers it with `code`/`message`.
    void registration(int code, const std::string& message = {}) {
        const auto m = next();
        EXPECT_EQ(m.conn, nri_plugin::kRuntimeConn);
        EXPECT_EQ(m.stream, 1u);
        EXPECT_EQ(m.type, nri_plugin::kRequest);
        ::ttrpc::Request r;
        ASSERT_TRUE(r.ParseFromString(m.body));
        EXPECT_EQ(r.service(), "nri.pkg.api.v1alpha1.Runtime");
        EXPECT_EQ(r.method(), "RegisterPlugin");
        api::RegisterPluginRequest reg;
        ASSERT_TRUE(reg.ParseFromString(r.payload()));
        EXPECT_EQ(reg.plugin_name(), "enflame-gcu");
        EXPECT_EQ(reg.plugin_idx(), "10");
        ::ttrpc::Response resp;
        resp.mutable_status()->set_code(code);
        resp.mutable_status()->set_message(message);
        send(nri_plugin::kRuntimeConn, 1, nri_plugin::kResponse, resp.SerializeAsString());
    }
};

struct Fixture {
    testutil::TempDir dir;
    nri_plugin::PluginOptions opts;
    Runtime rt;
    int plugin_fd = -1;
    std::future<inject::Result<void>> served;

    Fixture() {
        testutil::write_file(dir / "cdi/enflame.com-gpu.yaml", kSpec);
        opts.cfg.runtime.mode = inject::config::Mode::Cdi;
        opts.cfg.runtime.spec_dirs = {dir / "cdi"};
        int sv[2];
        EXPECT_EQ(::socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv), 0);
        rt.fd = sv[0];
        plugin_fd = sv[1];
        served = std::async(std::launch::async,
                            [this] { return nri_plugin::serve(plugin_fd, opts, -1); });
    }
    ~Fixture() {
        if (rt.fd >= 0) ::close(rt.fd);
        if (served.valid()) served.wait();
        ::close(plugin_fd);
    }
    inject::Result<void> close_and_wait() {
        ::close(rt.fd);
        rt.fd = -1;
        return served.get();
    }
};

api::CreateContainerRequest create(const std::string& env) {
    api::CreateContainerRequest c;
    c.mutable_pod()->set_name("p");
    c.mutable_pod()->set_namespace_("ns");
    c.mutable_container()->set_name("c");
    c.mutable_container()->add_env("PATH=/bin");
    c.mutable_container()->add_env(env);
    return c;
}

TEST(NriPlugin, RegistersConfiguresSynchronizesAndAnswersCreateContainer) {
    Fixture f;
    f.rt.registration(0);

    api::ConfigureRequest conf;
    conf.set_runtime_name("containerd");
    conf.set_runtime_version("1.7.24");
    auto r = f.rt.call(1, "Configure", conf);
    EXPECT_EQ(r.status().code(), 0);
    api::ConfigureResponse cr;
    ASSERT_TRUE(cr.ParseFromString(r.payload()));
    EXPECT_EQ(cr.events(), 0x8);  // CreateContainer only

    api::SynchronizeRequest sync;
    sync.set_more(true);
    r = f.rt.call(3, "Synchronize", sync);
    EXPECT_EQ(r.status().code(), 0);
    api::SynchronizeResponse sr;
    ASSERT_TRUE(sr.ParseFromString(r.payload()));
    EXPECT_TRUE(sr.more());  // echoed: a split sync is handled

    r = f.rt.call(5, "CreateContainer", create("ENFLAME_VISIBLE_DEVICES=0"));
    EXPECT_EQ(r.status().code(), 0) << r.status().message();
    api::CreateContainerResponse out;
    ASSERT_TRUE(out.ParseFromString(r.payload()));
    ASSERT_EQ(out.adjust().linux().devices_size(), 1);
    EXPECT_EQ(out.adjust().linux().devices(0).path(), "/dev/gcu0");
    EXPECT_EQ(out.adjust().linux().devices(0).major(), 1);
    EXPECT_EQ(out.adjust().linux().devices(0).minor(), 3);

    r = f.rt.call(7, "CreateContainer", create("OTHER=1"));
    EXPECT_EQ(r.status().code(), 0);
    ASSERT_TRUE(out.ParseFromString(r.payload()));
    EXPECT_FALSE(out.has_adjust());

    r = f.rt.call(9, "CreateContainer", create("ENFLAME_VISIBLE_DEVICES=5"));
    EXPECT_NE(r.status().code(), 0);
    EXPECT_NE(r.status().message().find("enflame-nri-plugin: container c (pod ns/p): "),
              std::string::npos)
        << r.status().message();
    EXPECT_NE(r.status().message().find("'enflame.com/gpu=5'"), std::string::npos)
        << r.status().message();

    r = f.rt.call(11, "UpdateContainer", api::Empty());
    EXPECT_EQ(r.status().code(), 12);  // UNIMPLEMENTED
    EXPECT_EQ(r.status().message(), "method UpdateContainer is not served here");

    auto done = f.close_and_wait();
    EXPECT_TRUE(done) << done.error().what();
}

TEST(NriPlugin, RefusedRegistrationIsAnErrorNamingWhy) {
    Fixture f;
    f.rt.registration(2, "plugin with index 10 and name enflame-gcu already registered");
    auto done = f.served.get();
    ASSERT_FALSE(done);
    EXPECT_EQ(done.error().what(),
              std::string("the runtime refused registration as 10-enflame-gcu: plugin with "
                          "index 10 and name enflame-gcu already registered"));
}

TEST(NriPlugin, RuntimeClosingInsideAFrameIsAnError) {
    Fixture f;
    f.rt.registration(0);
    const std::string half("\x00\x00\x00\x01\x00\x00\x01\x00partial", 15);
    ASSERT_EQ(::write(f.rt.fd, half.data(), half.size()), static_cast<ssize_t>(half.size()));
    auto done = f.close_and_wait();
    ASSERT_FALSE(done);
    EXPECT_EQ(done.error().what(),
              std::string("NRI socket closed inside a frame (15 bytes of it arrived)"));
}

TEST(NriPlugin, IdentityIsCheckedAsTheRuntimeWould) {
    nri_plugin::PluginOptions o;
    EXPECT_TRUE(nri_plugin::check_identity(o));
    o.idx = "7";
    EXPECT_EQ(nri_plugin::check_identity(o).error().what(),
              std::string("plugin index '7': want two digits (00-99)"));
    o.idx = "07";
    o.name = "a b";
    EXPECT_EQ(nri_plugin::check_identity(o).error().what(),
              std::string("plugin name 'a b': want letters, digits and _.+-"));
}

}  // namespace
