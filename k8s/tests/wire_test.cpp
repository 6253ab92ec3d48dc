// SPDX-License-Identifier: Apache-2.0
// Our .proto files must put exactly upstream's field numbers and package names on the wire, or
// kubelet will not understand us. These bytes are built by hand from the field numbers of the
// upstream api.proto each of ours names, not by our generated code, and then decoded with it.
#include <google/protobuf/descriptor.h>
#include <gtest/gtest.h>

#include <string>

#include "k8s/proto/deviceplugin_v1beta1.grpc.pb.h"
#include "k8s/proto/dra_v1.grpc.pb.h"
#include "k8s/proto/dra_v1beta1.grpc.pb.h"
#include "k8s/proto/pluginregistration.grpc.pb.h"
#include "k8s/proto/podresources_v1.grpc.pb.h"

namespace {

std::string varint(std::uint64_t v) {
    std::string out;
    while (v >= 0x80) {
        out += static_cast<char>((v & 0x7f) | 0x80);
        v >>= 7;
    }
    out += static_cast<char>(v);
    return out;
}
// A length-delimited field (wire type 2): strings, bytes, messages, map entries.
std::string len(int field, const std::string& body) {
    return varint(static_cast<std::uint64_t>(field) << 3 | 2) + varint(body.size()) + body;
}
// A varint field (wire type 0): bools, int32, int64.
std::string num(int field, std::uint64_t v) {
    return varint(static_cast<std::uint64_t>(field) << 3) + varint(v);
}

TEST(Wire, RegisterRequest) {
    const std::string bytes = len(1, "v1beta1") + len(2, "enflame-gcu.sock") +
                              len(3, "enflame.com/gcu") + len(4, num(1, 1) + num(2, 1));
    v1beta1::RegisterRequest r;
    ASSERT_TRUE(r.ParseFromString(bytes));
    EXPECT_EQ(r.version(), "v1beta1");
    EXPECT_EQ(r.endpoint(), "enflame-gcu.sock");
    EXPECT_EQ(r.resource_name(), "enflame.com/gcu");
    EXPECT_TRUE(r.options().pre_start_required());
    EXPECT_TRUE(r.options().get_preferred_allocation_available());
    // And back: our encoder writes the same bytes (fields in number order, as upstream's).
    EXPECT_EQ(r.SerializeAsString(), bytes);
}

TEST(Wire, ListAndWatchResponse) {
    const std::string dev =
        len(1, "TR6Y46010302") + len(2, "Unhealthy") + len(3, len(1, num(1, 1)));
    v1beta1::ListAndWatchResponse r;
    ASSERT_TRUE(r.ParseFromString(len(1, dev) + len(1, len(1, "x"))));
    ASSERT_EQ(r.devices_size(), 2);
    EXPECT_EQ(r.devices(0).id(), "TR6Y46010302");
    EXPECT_EQ(r.devices(0).health(), "Unhealthy");
    ASSERT_EQ(r.devices(0).topology().nodes_size(), 1);
    EXPECT_EQ(r.devices(0).topology().nodes(0).id(), 1);
    EXPECT_EQ(r.devices(1).id(), "x");
}

TEST(Wire, PreferredAllocation) {
    v1beta1::PreferredAllocationRequest r;
    ASSERT_TRUE(r.ParseFromString(len(1, len(1, "a") + len(1, "b") + len(2, "b") + num(3, 2))));
    ASSERT_EQ(r.container_requests_size(), 1);
    const auto& c = r.container_requests(0);
    EXPECT_EQ(c.available_deviceids_size(), 2);
    EXPECT_EQ(c.must_include_deviceids(0), "b");
    EXPECT_EQ(c.allocation_size(), 2);
    v1beta1::PreferredAllocationResponse out;
    ASSERT_TRUE(out.ParseFromString(len(1, len(1, "a"))));
    EXPECT_EQ(out.container_responses(0).deviceids(0), "a");
}

TEST(Wire, Allocate) {
    v1beta1::AllocateRequest req;
    ASSERT_TRUE(req.ParseFromString(len(1, len(1, "a") + len(1, "b"))));
    EXPECT_EQ(req.container_requests(0).devices_ids(1), "b");

    const std::string c = len(1, len(1, "ENFLAME_VISIBLE_DEVICES") + len(2, "0,1")) +
                          len(2, len(1, "/c") + len(2, "/h") + num(3, 1)) +
                          len(3, len(1, "/dev/gcu0") + len(2, "/x/dev/gcu0") + len(3, "rw")) +
                          len(4, len(1, "cdi.k8s.io/k") + len(2, "enflame.com/gpu=0")) +
                          len(5, len(1, "enflame.com/gpu=TR6Y46010302"));
    v1beta1::AllocateResponse r;
    ASSERT_TRUE(r.ParseFromString(len(1, c)));
    const auto& cr = r.container_responses(0);
    EXPECT_EQ(cr.envs().at("ENFLAME_VISIBLE_DEVICES"), "0,1");
    EXPECT_EQ(cr.mounts(0).container_path(), "/c");
    EXPECT_EQ(cr.mounts(0).host_path(), "/h");
    EXPECT_TRUE(cr.mounts(0).read_only());
    EXPECT_EQ(cr.devices(0).container_path(), "/dev/gcu0");
    EXPECT_EQ(cr.devices(0).host_path(), "/x/dev/gcu0");
    EXPECT_EQ(cr.devices(0).permissions(), "rw");
    EXPECT_EQ(cr.annotations().at("cdi.k8s.io/k"), "enflame.com/gpu=0");
    EXPECT_EQ(cr.cdi_devices(0).name(), "enflame.com/gpu=TR6Y46010302");

    v1beta1::PreStartContainerRequest pre;
    ASSERT_TRUE(pre.ParseFromString(len(1, "a")));
    EXPECT_EQ(pre.devices_ids(0), "a");
}

TEST(Wire, PluginRegistration) {
    pluginregistration::PluginInfo i;
    ASSERT_TRUE(i.ParseFromString(len(1, "DRAPlugin") + len(2, "gcu.enflame.com") +
                                  len(3, "/p/dra.sock") + len(4, "v1.DRAPlugin") +
                                  len(4, "v1beta1.DRAPlugin")));
    EXPECT_EQ(i.type(), "DRAPlugin");
    EXPECT_EQ(i.name(), "gcu.enflame.com");
    EXPECT_EQ(i.endpoint(), "/p/dra.sock");
    EXPECT_EQ(i.supported_versions(1), "v1beta1.DRAPlugin");
    pluginregistration::RegistrationStatus s;
    ASSERT_TRUE(s.ParseFromString(num(1, 1) + len(2, "boom")));
    EXPECT_TRUE(s.plugin_registered());
    EXPECT_EQ(s.error(), "boom");
}

TEST(Wire, PodResources) {
    const std::string devs = len(1, "enflame.com/gcu") + len(2, "TR6Y46010302");
    const std::string claim =
        len(2, "c") + len(3, "ns") +
        len(4, len(1, len(1, "k=x")) + len(2, "d") + len(3, "p") + len(4, "gcu-0"));
    const std::string ctr = len(1, "main") + len(2, devs) + len(5, claim);
    v1::ListPodResourcesResponse r;
    ASSERT_TRUE(r.ParseFromString(len(1, len(1, "pod") + len(2, "default") + len(3, ctr))));
    const auto& p = r.pod_resources(0);
    EXPECT_EQ(p.name(), "pod");
    EXPECT_EQ(p.namespace_(), "default");
    EXPECT_EQ(p.containers(0).name(), "main");
    EXPECT_EQ(p.containers(0).devices(0).resource_name(), "enflame.com/gcu");
    EXPECT_EQ(p.containers(0).devices(0).device_ids(0), "TR6Y46010302");
    const auto& dr = p.containers(0).dynamic_resources(0);
    EXPECT_EQ(dr.claim_name(), "c");
    EXPECT_EQ(dr.claim_namespace(), "ns");
    EXPECT_EQ(dr.claim_resources(0).cdi_devices(0).name(), "k=x");
    EXPECT_EQ(dr.claim_resources(0).driver_name(), "d");
    EXPECT_EQ(dr.claim_resources(0).pool_name(), "p");
    EXPECT_EQ(dr.claim_resources(0).device_name(), "gcu-0");
}

TEST(Wire, Dra) {
    const std::string claim = len(1, "ns") + len(2, "uid-1") + len(3, "claim");
    k8s::io::kubelet::pkg::apis::dra::v1::NodePrepareResourcesRequest req;
    ASSERT_TRUE(req.ParseFromString(len(1, claim)));
    EXPECT_EQ(req.claims(0).namespace_(), "ns");
    EXPECT_EQ(req.claims(0).uid(), "uid-1");
    EXPECT_EQ(req.claims(0).name(), "claim");
    const std::string dev =
        len(1, "r") + len(2, "node") + len(3, "gcu-0") + len(4, "k=uid-1-gcu-0") + len(5, "s");
    k8s::io::kubelet::pkg::apis::dra::v1::NodePrepareResourcesResponse resp;
    ASSERT_TRUE(resp.ParseFromString(len(1, len(1, "uid-1") + len(2, len(1, dev) + len(2, "e")))));
    const auto& one = resp.claims().at("uid-1");
    EXPECT_EQ(one.devices(0).request_names(0), "r");
    EXPECT_EQ(one.devices(0).pool_name(), "node");
    EXPECT_EQ(one.devices(0).device_name(), "gcu-0");
    EXPECT_EQ(one.devices(0).cdi_device_ids(0), "k=uid-1-gcu-0");
    EXPECT_EQ(one.devices(0).share_id(), "s");
    EXPECT_EQ(one.error(), "e");
    k8s::io::kubelet::pkg::apis::dra::v1beta1::NodeUnprepareResourcesResponse un;
    ASSERT_TRUE(un.ParseFromString(len(1, len(1, "uid-1") + len(2, len(1, "gone")))));
    EXPECT_EQ(un.claims().at("uid-1").error(), "gone");
}

// The gRPC method paths kubelet calls are "/<package>.<Service>/<Method>".
TEST(Wire, MethodPaths) {
    const auto* pool = google::protobuf::DescriptorPool::generated_pool();
    for (const char* m :
         {"v1beta1.Registration.Register", "v1beta1.DevicePlugin.GetDevicePluginOptions",
          "v1beta1.DevicePlugin.ListAndWatch", "v1beta1.DevicePlugin.GetPreferredAllocation",
          "v1beta1.DevicePlugin.Allocate", "v1beta1.DevicePlugin.PreStartContainer",
          "pluginregistration.Registration.GetInfo",
          "pluginregistration.Registration.NotifyRegistrationStatus", "v1.PodResourcesLister.List",
          "k8s.io.kubelet.pkg.apis.dra.v1.DRAPlugin.NodePrepareResources",
          "k8s.io.kubelet.pkg.apis.dra.v1beta1.DRAPlugin.NodeUnprepareResources"}) {
        EXPECT_NE(pool->FindMethodByName(m), nullptr) << m;
    }
    EXPECT_TRUE(pool->FindMethodByName("v1beta1.DevicePlugin.ListAndWatch")->server_streaming());
}

}  // namespace
