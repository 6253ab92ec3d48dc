// SPDX-License-Identifier: Apache-2.0
// The DRA plugin's claim decisions (k8s/dra/claims.cpp): claim JSON -> our devices, with the
// exact message a user reads for each broken claim.
#include <gtest/gtest.h>

#include <string>

#include "dra/claims.hpp"

namespace {

using dra::Json;

const dra::ClaimRef kRef{"ns1", "c1", "uid-1"};

// An allocated claim with `results` (and optional `config`), as the API server returns it.
Json claim(Json results, Json config = nullptr) {
    Json c = {{"apiVersion", "resource.k8s.io/v1"},
              {"kind", "ResourceClaim"},
              {"metadata", {{"name", "c1"}, {"namespace", "ns1"}, {"uid", "uid-1"}}},
              {"spec", {{"devices", {{"requests", Json::array()}}}}},
              {"status", {{"allocation", {{"devices", {{"results", std::move(results)}}}}}}}};
    if (!config.is_null()) c["status"]["allocation"]["devices"]["config"] = std::move(config);
    return c;
}

Json result(const std::string& request, const std::string& device,
            const std::string& driver = "gcu.enflame.com") {
    return {{"request", request}, {"driver", driver}, {"pool", "node1"}, {"device", device}};
}

Json opaque(Json params, Json requests = nullptr, const std::string& driver = "gcu.enflame.com") {
    Json c = {{"source", "FromClaim"},
              {"opaque", {{"driver", driver}, {"parameters", std::move(params)}}}};
    if (!requests.is_null()) c["requests"] = std::move(requests);
    return c;
}

TEST(DraClaims, OursOnlyInOrder) {
    const auto c = claim({result("gpu", "gcu-0"), result("nic", "eth0", "net.example.com"),
                          result("drs", "gcu-1-drs-2")});
    auto r = dra::allocated_devices(c, kRef);
    ASSERT_TRUE(r) << r.error().what();
    ASSERT_EQ(r->size(), 2u);
    EXPECT_EQ((*r)[0], (dra::Allocated{"gpu", "node1", "gcu-0"}));
    EXPECT_EQ((*r)[1], (dra::Allocated{"drs", "node1", "gcu-1-drs-2"}));
}

TEST(DraClaims, ValidOpaqueConfigs) {
    const Json configs = {
        opaque({{"apiVersion", "gcu.enflame.com/v1alpha1"}, {"kind", "GcuConfig"}}, {"gpu"}),
        opaque({{"apiVersion", "gcu.enflame.com/v1alpha1"}, {"kind", "DrsConfig"}}, {"drs"}),
        // another driver's config is not ours to judge
        opaque({{"anything", 1}}, nullptr, "net.example.com"),
        {{"source", "FromClass"}, {"requests", {"gpu"}}}};
    auto r = dra::allocated_devices(
        claim({result("gpu", "gcu-0"), result("drs", "gcu-1-drs-2")}, configs), kRef);
    EXPECT_TRUE(r) << r.error().what();
}

struct BadCase {
    const char* name;
    Json claim;
    std::string want;
};

TEST(DraClaims, BadClaimsNameTheClaimAndField) {
    Json no_uid = claim({result("gpu", "gcu-0")});
    no_uid["metadata"].erase("uid");
    Json other_uid = claim({result("gpu", "gcu-0")});
    other_uid["metadata"]["uid"] = "uid-2";
    Json unallocated = claim({});
    unallocated["status"] = Json::object();
    Json no_status = claim({});
    no_status.erase("status");
    Json no_results = claim({});
    no_results["status"]["allocation"]["devices"].erase("results");
    Json no_device = claim({result("gpu", "gcu-0")});
    no_device["status"]["allocation"]["devices"]["results"][0].erase("device");
    Json number_pool = claim({result("gpu", "gcu-0")});
    number_pool["status"]["allocation"]["devices"]["results"][0]["pool"] = 7;
    const std::string p = "claim 'ns1/c1': ";
    const BadCase cases[] = {
        {"NotAnObject", Json::array(), p + "want an object, got array"},
        {"NoUid", no_uid, p + "metadata.uid: missing"},
        {"UidMismatch", other_uid,
         p + "metadata.uid is 'uid-2', kubelet asked for 'uid-1' (the claim was deleted and "
             "created again)"},
        {"NotAllocated", unallocated,
         p + "status.allocation: missing (the claim is not allocated)"},
        {"NoStatus", no_status, p + "status.allocation: missing (the claim is not allocated)"},
        {"NoResults", no_results, p + "status.allocation.devices.results: missing"},
        {"ResultWithoutDevice", no_device,
         p + "status.allocation.devices.results[0].device: missing"},
        {"PoolNotAString", number_pool,
         p + "status.allocation.devices.results[0].pool: want a string, got number"},
        {"OtherDriverOnly", claim({result("gpu", "gpu-0", "gpu.nvidia.com")}),
         p + "status.allocation.devices.results: no device of driver 'gcu.enflame.com'"},
        {"NotOurDeviceName", claim({result("gpu", "gpu-0")}),
         p + "status.allocation.devices.results[0].device: device 'gpu-0' is not one of ours: want "
             "gcu-<index>, gcu-<index>-drs-<instance> or gcu-<index>-<profile>-<k>"},
        {"UnknownApiVersion",
         claim({result("gpu", "gcu-0")},
               {opaque({{"apiVersion", "gcu.enflame.com/v9"}, {"kind", "GcuConfig"}})}),
         p + "status.allocation.devices.config[0].opaque.parameters: apiVersion "
             "'gcu.enflame.com/v9': want "
             "gcu.enflame.com/v1alpha1"},
        {"UnknownKind",
         claim({result("gpu", "gcu-0")},
               {opaque({{"apiVersion", "gcu.enflame.com/v1alpha1"}, {"kind", "GpuConfig"}})}),
         p + "status.allocation.devices.config[0].opaque.parameters: kind 'GpuConfig': want "
             "GcuConfig or DrsConfig"},
        {"UnknownField",
         claim({result("gpu", "gcu-0")}, {opaque({{"apiVersion", "gcu.enflame.com/v1alpha1"},
                                                  {"kind", "GcuConfig"},
                                                  {"sharing", 1}})}),
         p + "status.allocation.devices.config[0].opaque.parameters: unknown field 'sharing' in "
             "GcuConfig"},
        {"DrsConfigOnWholeCard",
         claim({result("gpu", "gcu-0")},
               {opaque({{"apiVersion", "gcu.enflame.com/v1alpha1"}, {"kind", "DrsConfig"}})}),
         p + "status.allocation.devices.config[0].opaque.parameters: DrsConfig does not apply to "
             "device 'gcu-0' "
             "(a whole card: use GcuConfig)"},
        {"ParametersMissing",
         claim({result("gpu", "gcu-0")}, {{{"opaque", {{"driver", "gcu.enflame.com"}}}}}),
         p + "status.allocation.devices.config[0].opaque.parameters: missing"},
    };
    for (const auto& c : cases) {
        auto r = dra::allocated_devices(c.claim, kRef);
        ASSERT_FALSE(r) << c.name;
        EXPECT_EQ(r.error().what(), c.want) << c.name;
    }
}

TEST(DraClaims, ConfigForOtherRequestsIgnoresTheirKind) {
    // A DrsConfig for request "drs" says nothing about the whole card of request "gpu".
    const Json configs = {
        opaque({{"apiVersion", "gcu.enflame.com/v1alpha1"}, {"kind", "DrsConfig"}}, {"drs"})};
    EXPECT_TRUE(dra::allocated_devices(claim({result("gpu", "gcu-0")}, configs), kRef));
    // A v1 subrequest "drs/small" is covered by "drs".
    auto r = dra::allocated_devices(claim({result("drs/small", "gcu-0")}, configs), kRef);
    ASSERT_FALSE(r);
    EXPECT_NE(r.error().what().find("DrsConfig does not apply to device 'gcu-0'"),
              std::string::npos);
}

TEST(DraClaims, DeviceNames) {
    struct Case {
        const char* text;
        bool ok;
        std::uint32_t index;
        std::optional<std::uint32_t> drs;
        std::optional<dra::Placement> placement = std::nullopt;
    };
    const Case cases[] = {
        {"gcu-0", true, 0, {}},
        {"gcu-15", true, 15, {}},
        {"gcu-3-drs-0", true, 3, 0},
        {"gcu-3-drs-12", true, 3, 12},
        {"gcu-", false, 0, {}},
        {"gcu-01", false, 0, {}},
        {"gcu--1", false, 0, {}},
        {"gcu-1-drs-", false, 0, {}},
        {"gcu-1-mig-1", false, 0, {}},
        {"GCU-1", false, 0, {}},
        {"gcu-1x", false, 0, {}},
        // DRS placements (slices.hpp placement_name): the profile spelled with '-'.
        {"gcu-0-1g-11gb-0", true, 0, {}, dra::Placement{"1g-11gb", 0}},
        {"gcu-12-12g-96gb-3", true, 12, {}, dra::Placement{"12g-96gb", 3}},
        {"gcu-0-1g-11gb-", false, 0, {}},
        {"gcu-0-1g-11gb-01", false, 0, {}},
        {"gcu-0-1g.11gb-0", false, 0, {}},
        {"gcu-0-g-11gb-0", false, 0, {}},
        {"gcu-0-1g-gb-0", false, 0, {}},
        {"gcu-0-1g-11gb", false, 0, {}},
        {"gcu-0-full-0", false, 0, {}}};
    for (const auto& c : cases) {
        auto r = dra::parse_device_name(c.text);
        ASSERT_EQ(static_cast<bool>(r), c.ok) << c.text;
        if (!c.ok) continue;
        EXPECT_EQ(r->index, c.index) << c.text;
        EXPECT_EQ(r->drs_instance, c.drs) << c.text;
        EXPECT_EQ(r->placement, c.placement) << c.text;
        EXPECT_EQ(r->is_drs(), c.drs || c.placement) << c.text;
        EXPECT_EQ(r->str(), c.text);
    }
}

}  // namespace
