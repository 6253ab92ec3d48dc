// SPDX-License-Identifier: Apache-2.0
// The gRPC service over a real unix socket, driven as kubelet drives it: ListAndWatch sends
// the whole list, again on a change (not on an update that changes nothing), and ends when
// its epoch does; Allocate's errors carry a gRPC code and name the ID.
#include "device-plugin/service.hpp"

#include <gtest/gtest.h>
#include <stdlib.h>

#include <filesystem>
#include <thread>

#include "k8s/nri_lock.hpp"
#include "k8s/socket.hpp"
#include "temp_dir.hpp"

namespace {

using k8s_test::TempDir;

device_plugin::Inventory two_cards() {
    device_plugin::Inventory inv;
    for (int i = 0; i < 2; ++i) {
        device_plugin::PluginDevice d;
        d.id = d.card_id = d.uuid = d.cdi_name = "U" + std::to_string(i);
        d.numa_node = i;
        inv.devices.push_back(d);
    }
    return inv;
}

// A stream that only wakes on a notify: if ending an epoch did not notify, Read would block
// for an hour and the test's deadline would fail it.
constexpr std::chrono::hours kNeverPoll{1};

// Polls (bounded: 10 s) until a stream waits for a change.
void wait_until_waiting(const device_plugin::State& s) {
    for (int i = 0; i < 1000 && s.waiting() == 0; ++i)
        std::this_thread::sleep_for(std::chrono::milliseconds(10));
    ASSERT_EQ(s.waiting(), 1u);
}

struct Fixture {
    TempDir dir;
    std::shared_ptr<device_plugin::State> state =
        std::make_shared<device_plugin::State>(device_plugin::Settings{}, two_cards());
    device_plugin::Service svc{state, kNeverPoll};
    k8s::UnixServer server;
    std::unique_ptr<v1beta1::DevicePlugin::Stub> stub;

    Fixture() {
        auto s = k8s::serve_unix(dir.path() + "/p.sock", {&svc});
        EXPECT_TRUE(s) << s.error().what();
        server = std::move(*s);
        auto ch = k8s::dial_unix(server.path, std::chrono::milliseconds(5000));
        EXPECT_TRUE(ch) << ch.error().what();
        stub = v1beta1::DevicePlugin::NewStub(*ch);
    }
    ~Fixture() { k8s::stop_unix(server, std::chrono::milliseconds(100)); }
};

TEST(Service, ListAndWatchChangesAndEpochEnd) {
    Fixture f;
    grpc::ClientContext ctx;
    ctx.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(20));
    v1beta1::Empty e;
    auto reader = f.stub->ListAndWatch(&ctx, e);
    v1beta1::ListAndWatchResponse r;
    ASSERT_TRUE(reader->Read(&r));
    ASSERT_EQ(r.devices_size(), 2);
    EXPECT_EQ(r.devices(1).health(), "Healthy");

    // An update that changes nothing sends nothing; the next real change is the next message.
    wait_until_waiting(*f.state);
    f.state->update(device_plugin::Settings{}, two_cards());
    auto inv = two_cards();
    inv.devices[1].healthy = false;
    f.state->update(device_plugin::Settings{}, inv);
    ASSERT_TRUE(reader->Read(&r));
    EXPECT_EQ(r.devices(1).health(), "Unhealthy");
    EXPECT_EQ(r.devices(0).health(), "Healthy");

    // A new epoch (a re-serve after a kubelet restart, or SIGTERM) ends a waiting stream at once.
    wait_until_waiting(*f.state);
    f.state->next_epoch();
    EXPECT_FALSE(reader->Read(&r));
    EXPECT_TRUE(reader->Finish().ok());
}

TEST(Service, AllocateErrorsAndOptions) {
    Fixture f;
    auto inv = two_cards();
    inv.devices[1].healthy = false;
    f.state->update(device_plugin::Settings{}, inv);
    struct {
        const char* name;
        std::vector<std::string> ids;
        grpc::StatusCode code;
        std::string message;
    } cases[] = {
        {"Ok", {"U0"}, grpc::StatusCode::OK, ""},
        {"Unknown",
         {"U9"},
         grpc::StatusCode::NOT_FOUND,
         "unknown device ID 'U9' for enflame.com/gcu"},
        {"Unhealthy", {"U0", "U1"}, grpc::StatusCode::INVALID_ARGUMENT, "device 'U1' is unhealthy"},
    };
    for (const auto& c : cases) {
        grpc::ClientContext ctx;
        v1beta1::AllocateRequest req;
        auto* one = req.add_container_requests();
        for (const auto& id : c.ids) one->add_devices_ids(id);
        v1beta1::AllocateResponse resp;
        const auto st = f.stub->Allocate(&ctx, req, &resp);
        EXPECT_EQ(st.error_code(), c.code) << c.name;
        EXPECT_EQ(st.error_message(), c.message) << c.name;
        if (st.ok())
            EXPECT_EQ(resp.container_responses(0).cdi_devices(0).name(), "enflame.com/gpu=U0");
    }
    grpc::ClientContext ctx;
    v1beta1::Empty e;
    v1beta1::DevicePluginOptions o;
    ASSERT_TRUE(f.stub->GetDevicePluginOptions(&ctx, e, &o).ok());
    EXPECT_TRUE(o.get_preferred_allocation_available());
    EXPECT_FALSE(o.pre_start_required());
}

// --require-nri: Allocate answers only while enflame-nri-plugin holds its lock, and its refusal
// (what kubelet shows as the pod's UnexpectedAdmissionError) names the reason and the devices.
// The HAMi allocator is not reached either (it would make DRS instances for nothing).
TEST(Service, AllocateRequiresTheNriPlugin) {
    Fixture f;
    device_plugin::Settings s;
    s.require_nri_lock = f.dir.path() + "/nri-plugin.lock";
    f.state->update(s, two_cards());
    auto call = [&](const std::vector<std::string>& ids, v1beta1::AllocateResponse* resp) {
        grpc::ClientContext ctx;
        v1beta1::AllocateRequest req;
        auto* one = req.add_container_requests();
        for (const auto& id : ids) one->add_devices_ids(id);
        return f.stub->Allocate(&ctx, req, resp);
    };
    v1beta1::AllocateResponse resp;
    // no lock file: no plugin ever ran here
    auto st = call({"U0", "U1"}, &resp);
    EXPECT_EQ(st.error_code(), grpc::StatusCode::FAILED_PRECONDITION);
    EXPECT_EQ(st.error_message(),
              "enflame-nri-plugin is not running on this node: cannot inject U0,U1");
    EXPECT_EQ(resp.container_responses_size(), 0);

    auto lock = k8s::NriLock::create(s.require_nri_lock);
    ASSERT_TRUE(lock) << lock.error().what();
    // the file there but nobody holding it: the plugin is gone
    st = call({"U1"}, &resp);
    EXPECT_EQ(st.error_code(), grpc::StatusCode::FAILED_PRECONDITION);
    EXPECT_EQ(st.error_message(),
              "enflame-nri-plugin is not running on this node: cannot inject U1");

    // held (a different open file description conflicts as another process's would)
    ASSERT_TRUE(lock->hold());
    st = call({"U1"}, &resp);
    ASSERT_TRUE(st.ok()) << st.error_message();
    EXPECT_EQ(resp.container_responses(0).cdi_devices(0).name(), "enflame.com/gpu=U1");

    bool hook_called = false;
    f.state->set_allocator([&](const device_plugin::Inventory&, const device_plugin::Settings&,
                               const v1beta1::AllocateRequest&, v1beta1::AllocateResponse*) {
        hook_called = true;
        return grpc::Status::OK;
    });
    lock->release();
    v1beta1::AllocateResponse none;
    st = call({"U0"}, &none);
    EXPECT_EQ(st.error_code(), grpc::StatusCode::FAILED_PRECONDITION);
    EXPECT_FALSE(hook_called);

    // without --require-nri nothing is checked
    f.state->set_allocator({});
    f.state->update(device_plugin::Settings{}, two_cards());
    st = call({"U0"}, &none);
    EXPECT_TRUE(st.ok()) << st.error_message();
}

}  // namespace
