// SPDX-License-Identifier: Apache-2.0
// The DRA plugin's gRPC services (k8s/dra/service.cpp) over real unix sockets: GetInfo as the
// plugin watcher reads it, and NodePrepare/NodeUnprepare in both API versions giving the same
// answers, every claim keyed by UID.
#include <gtest/gtest.h>

#include <filesystem>
#include <map>

#include "dra/service.hpp"
#include "dra_fixture.hpp"
#include "k8s/socket.hpp"
#include "temp_dir.hpp"

namespace {

using edra_test::claim;

class DraService : public ::testing::Test {
protected:
    void SetUp() override {
        std::filesystem::create_directories(tmp_.path() + "/cdi");
        std::filesystem::create_directories(tmp_.path() + "/root");
        dra::DriverOptions o;
        o.cdi_root = tmp_.path() + "/cdi";
        o.checkpoint_path = tmp_.path() + "/cp.json";
        o.node_name = "node1";
        o.cdi.driver_root = tmp_.path() + "/root";
        claims_["ns/a"] = claim("a", "uid-a", {"gcu-0"});
        claims_["ns/b"] = claim("b", "uid-b", {"gcu-1-drs-2"});
        auto d = dra::Driver::create(
            o,
            [this](const std::string& ns, const std::string& name) -> inject::Result<dra::Json> {
                const auto it = claims_.find(ns + "/" + name);
                if (it == claims_.end())
                    return inject::fail(inject::Errc::NotFound, "no claim " + ns + "/" + name);
                return it->second;
            },
            [] { return inject::Result<inject::device::Host>(edra_test::host2()); });
        ASSERT_TRUE(d) << d.error().what();
        driver_ = std::move(*d);
        v1_ = std::make_unique<dra::DraV1>(*driver_);
        v1beta1_ = std::make_unique<dra::DraV1beta1>(*driver_);
        reg_ = std::make_unique<dra::Registration>(
            dra::plugin_info("gcu.enflame.com", tmp_.path() + "/dra.sock"));
        auto s =
            k8s::serve_unix(tmp_.path() + "/dra.sock", {v1_.get(), v1beta1_.get(), reg_.get()});
        ASSERT_TRUE(s) << s.error().what();
        server_ = std::move(*s);
        auto ch = k8s::dial_unix(tmp_.path() + "/dra.sock", std::chrono::milliseconds(2000));
        ASSERT_TRUE(ch);
        ch_ = *ch;
    }
    void TearDown() override { k8s::stop_unix(server_, std::chrono::milliseconds(0)); }

    template <class Req>
    static void add(Req& req, const std::string& name, const std::string& uid) {
        auto* c = req.add_claims();
        c->set_namespace_("ns");
        c->set_name(name);
        c->set_uid(uid);
    }

    k8s_test::TempDir tmp_;
    std::map<std::string, dra::Json> claims_;
    std::unique_ptr<dra::Driver> driver_;
    std::unique_ptr<dra::DraV1> v1_;
    std::unique_ptr<dra::DraV1beta1> v1beta1_;
    std::unique_ptr<dra::Registration> reg_;
    k8s::UnixServer server_;
    std::shared_ptr<grpc::Channel> ch_;
};

TEST_F(DraService, GetInfoAndRegistrationStatus) {
    auto stub = pluginregistration::Registration::NewStub(ch_);
    grpc::ClientContext ctx;
    pluginregistration::PluginInfo info;
    ASSERT_TRUE(stub->GetInfo(&ctx, {}, &info).ok());
    EXPECT_EQ(info.type(), "DRAPlugin");
    EXPECT_EQ(info.name(), "gcu.enflame.com");
    EXPECT_EQ(info.endpoint(), tmp_.path() + "/dra.sock");
    ASSERT_EQ(info.supported_versions_size(), 2);
    EXPECT_EQ(info.supported_versions(0), "v1.DRAPlugin");
    EXPECT_EQ(info.supported_versions(1), "v1beta1.DRAPlugin");
    EXPECT_FALSE(reg_->registered());
    grpc::ClientContext ctx2;
    pluginregistration::RegistrationStatus st;
    st.set_plugin_registered(true);
    pluginregistration::RegistrationStatusResponse resp;
    ASSERT_TRUE(stub->NotifyRegistrationStatus(&ctx2, st, &resp).ok());
    EXPECT_TRUE(reg_->registered());
}

TEST_F(DraService, PrepareBothVersionsSameAnswer) {
    auto v1 = dra::drav1::DRAPlugin::NewStub(ch_);
    dra::drav1::NodePrepareResourcesRequest req;
    add(req, "a", "uid-a");
    add(req, "b", "uid-b");
    add(req, "nope", "uid-n");
    dra::drav1::NodePrepareResourcesResponse resp;
    grpc::ClientContext ctx;
    ASSERT_TRUE(v1->NodePrepareResources(&ctx, req, &resp).ok());
    ASSERT_EQ(resp.claims_size(), 3);
    const auto& a = resp.claims().at("uid-a");
    EXPECT_EQ(a.error(), "");
    ASSERT_EQ(a.devices_size(), 1);
    EXPECT_EQ(a.devices(0).pool_name(), "node1");
    EXPECT_EQ(a.devices(0).device_name(), "gcu-0");
    ASSERT_EQ(a.devices(0).request_names_size(), 1);
    EXPECT_EQ(a.devices(0).request_names(0), "gpu");
    ASSERT_EQ(a.devices(0).cdi_device_ids_size(), 1);
    EXPECT_EQ(a.devices(0).cdi_device_ids(0), "k8s.gcu.enflame.com/claim=uid-a-gcu-0");
    EXPECT_FALSE(a.devices(0).has_share_id());
    EXPECT_EQ(resp.claims().at("uid-b").devices(0).cdi_device_ids(0),
              "k8s.gcu.enflame.com/claim=uid-b-gcu-1-drs-2");
    EXPECT_EQ(resp.claims().at("uid-n").error(), "claim 'ns/nope': fetching it: no claim ns/nope");
    EXPECT_EQ(resp.claims().at("uid-n").devices_size(), 0);

    // v1beta1 (kubelet 1.32-1.33): the same answer, from the checkpoint.
    auto beta = dra::drav1beta1::DRAPlugin::NewStub(ch_);
    dra::drav1beta1::NodePrepareResourcesRequest breq;
    add(breq, "a", "uid-a");
    dra::drav1beta1::NodePrepareResourcesResponse bresp;
    grpc::ClientContext bctx;
    ASSERT_TRUE(beta->NodePrepareResources(&bctx, breq, &bresp).ok());
    EXPECT_EQ(bresp.claims().at("uid-a").devices(0).SerializeAsString(),
              a.devices(0).SerializeAsString());

    dra::drav1beta1::NodeUnprepareResourcesRequest ureq;
    add(ureq, "a", "uid-a");
    add(ureq, "nope", "uid-n");
    dra::drav1beta1::NodeUnprepareResourcesResponse uresp;
    grpc::ClientContext uctx;
    ASSERT_TRUE(beta->NodeUnprepareResources(&uctx, ureq, &uresp).ok());
    ASSERT_EQ(uresp.claims_size(), 2);
    EXPECT_EQ(uresp.claims().at("uid-a").error(), "");
    EXPECT_EQ(uresp.claims().at("uid-n").error(), "");
    EXPECT_FALSE(
        std::filesystem::exists(tmp_.path() + "/cdi/k8s.gcu.enflame.com-claim_uid-a.yaml"));
    EXPECT_TRUE(std::filesystem::exists(tmp_.path() + "/cdi/k8s.gcu.enflame.com-claim_uid-b.yaml"));
}

}  // namespace
