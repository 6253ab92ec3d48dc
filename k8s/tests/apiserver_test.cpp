// SPDX-License-Identifier: Apache-2.0
// The API-server client against fake_apiserver.py over real TLS: every verb, discovery, the
// error codes and messages a user sees, retries, timeouts and a CA that does not verify (the
// kubeconfig and in-cluster loaders: apiserver_config_test.cpp).
#include "k8s/apiserver.hpp"

#include <gtest/gtest.h>
#include <yaml-cpp/yaml.h>

#include <atomic>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <thread>
#include <vector>

#include "api_client_util.hpp"
#include "fake_apiserver.hpp"

namespace {

using inject::Errc;
using k8s::api::Client;
using k8s::api::Json;
using k8s_test::FakeApiServer;
using k8s_test::TempDir;

constexpr const char* kSlices = "/apis/resource.k8s.io/v1/resourceslices";

Json slice(const std::string& name, const std::string& node, const std::string& label = "a") {
    return {{"apiVersion", "resource.k8s.io/v1"},
            {"kind", "ResourceSlice"},
            {"metadata", {{"name", name}, {"labels", {{"app", label}}}}},
            {"spec",
             {{"driver", "gcu.enflame.com"},
              {"nodeName", node},
              {"pool", {{"name", node}, {"generation", 1}, {"resourceSliceCount", 1}}},
              {"devices", Json::array({{{"name", "gcu-0"}}})}}}};
}

using k8s_test::client;
using k8s_test::slurp;

TEST(ApiClient, EveryVerbRoundTrips) {
    FakeApiServer fake;
    ASSERT_TRUE(fake.up());
    auto c = client(fake.config());
    ASSERT_TRUE(c);
    auto made = c->create(kSlices, slice("n1-s0", "n1"));
    ASSERT_TRUE(made) << made.error().what();
    EXPECT_FALSE((*made)["metadata"]["resourceVersion"].get<std::string>().empty());
    ASSERT_TRUE(c->create(kSlices, slice("n2-s0", "n2", "b")));

    auto by_node = c->list(kSlices, "", "spec.nodeName=n1,spec.driver=gcu.enflame.com");
    ASSERT_TRUE(by_node) << by_node.error().what();
    ASSERT_EQ((*by_node)["items"].size(), 1U);
    EXPECT_EQ((*by_node)["items"][0]["metadata"]["name"], "n1-s0");
    auto by_label = c->list(kSlices, "app=b");
    ASSERT_TRUE(by_label);
    ASSERT_EQ((*by_label)["items"].size(), 1U);
    EXPECT_EQ((*by_label)["items"][0]["metadata"]["name"], "n2-s0");
    auto all = c->list(kSlices);
    ASSERT_TRUE(all);
    EXPECT_EQ((*all)["items"].size(), 2U);

    auto got = c->get(std::string(kSlices) + "/n1-s0");
    ASSERT_TRUE(got);
    (*got)["spec"]["pool"]["generation"] = 2;
    auto put = c->update(std::string(kSlices) + "/n1-s0", *got);
    ASSERT_TRUE(put) << put.error().what();
    EXPECT_EQ((*put)["spec"]["pool"]["generation"], 2);

    auto merged = c->patch_merge(std::string(kSlices) + "/n1-s0",
                                 {{"metadata", {{"labels", {{"app", "c"}}}}}});
    ASSERT_TRUE(merged) << merged.error().what();
    EXPECT_EQ((*merged)["metadata"]["labels"]["app"], "c");
    auto patched = c->patch_json(
        std::string(kSlices) + "/n1-s0",
        Json::array({{{"op", "replace"}, {"path", "/spec/pool/generation"}, {"value", 3}}}));
    ASSERT_TRUE(patched) << patched.error().what();
    EXPECT_EQ((*patched)["spec"]["pool"]["generation"], 3);

    ASSERT_TRUE(c->remove(std::string(kSlices) + "/n1-s0"));
    EXPECT_TRUE(c->remove(std::string(kSlices) + "/n1-s0")) << "deleting what is gone is fine";
    auto gone = c->get(std::string(kSlices) + "/n1-s0");
    ASSERT_FALSE(gone);
    EXPECT_EQ(gone.error().code(), Errc::NotFound);

    std::vector<std::string> verbs;
    for (const auto& w : fake.writes()) verbs.push_back(w["verb"]);
    EXPECT_EQ(verbs, (std::vector<std::string>{"POST", "POST", "PUT", "PATCH", "PATCH", "DELETE"}));
}

TEST(ApiClient, NotFoundSaysVerbPathStatusAndServerMessage) {
    FakeApiServer fake;
    ASSERT_TRUE(fake.up());
    auto c = client(fake.config());
    auto r = c->get("/apis/resource.k8s.io/v1/namespaces/ns/resourceclaims/c");
    ASSERT_FALSE(r);
    EXPECT_EQ(r.error().code(), Errc::NotFound);
    EXPECT_EQ(r.error().what(),
              "GET /apis/resource.k8s.io/v1/namespaces/ns/resourceclaims/c: 404 Not Found: "
              "resourceclaims.resource.k8s.io \"c\" not found");
}

TEST(ApiClient, ServesClaimsFromFiles) {
    FakeApiServer fake;
    ASSERT_TRUE(fake.up());
    fake.put_claim("ns", "c", R"({"metadata": {"name": "c", "namespace": "ns", "uid": "u-1"}})");
    auto c = client(fake.config());
    auto r = c->get("/apis/resource.k8s.io/v1beta1/namespaces/ns/resourceclaims/c");
    ASSERT_TRUE(r) << r.error().what();
    EXPECT_EQ((*r)["metadata"]["uid"], "u-1");
    EXPECT_EQ((*r)["apiVersion"], "resource.k8s.io/v1beta1");
}

TEST(ApiClient, StalePutIsAConflict) {
    FakeApiServer fake;
    ASSERT_TRUE(fake.up());
    auto c = client(fake.config());
    auto made = c->create(kSlices, slice("s", "n"));
    ASSERT_TRUE(made);
    ASSERT_TRUE(
        c->patch_merge(std::string(kSlices) + "/s", {{"metadata", {{"labels", {{"x", "y"}}}}}}));
    auto r =
        c->update(std::string(kSlices) + "/s", *made);  // still carries the old resourceVersion
    ASSERT_FALSE(r);
    EXPECT_EQ(r.error().code(), Errc::Conflict);
    EXPECT_EQ(r.error().what(),
              "PUT /apis/resource.k8s.io/v1/resourceslices/s: 409 Conflict: Operation cannot be "
              "fulfilled on resourceslices.resource.k8s.io \"s\": the object has been modified; "
              "please apply your changes to the latest version and try again");
}

TEST(ApiClient, InvalidObjectIsInvalidInputWithTheServersReason) {
    FakeApiServer fake;
    ASSERT_TRUE(fake.up());
    auto c = client(fake.config());
    Json bad = slice("s", "n");
    bad["spec"]["devices"][0]["name"] = "GCU_0";
    auto r = c->create(kSlices, bad);
    ASSERT_FALSE(r);
    EXPECT_EQ(r.error().code(), Errc::InvalidInput);
    EXPECT_NE(r.error().what().find(
                  "422 Unprocessable Entity: ResourceSlice.resource.k8s.io \"s\" is invalid: "
                  "spec.devices[0].name: Invalid value: 'GCU_0'"),
              std::string::npos)
        << r.error().what();
}

TEST(ApiClient, WrongTokenIsPermission) {
    FakeApiServer fake;
    ASSERT_TRUE(fake.up());
    auto cfg = fake.config();
    cfg.token = "not-the-token";
    auto c = client(cfg);
    auto r = c->list(kSlices);
    ASSERT_FALSE(r);
    EXPECT_EQ(r.error().code(), Errc::Permission);
    EXPECT_EQ(r.error().what(),
              "API server " + fake.url() +
                  ": GET /apis/resource.k8s.io/v1/resourceslices: 401 Unauthorized: Unauthorized");
}

/// A client whose token comes from a file in `d` (holding "test-token"), re-read every `period`.
std::unique_ptr<Client> token_file_client(const FakeApiServer& fake, const TempDir& d,
                                          std::chrono::milliseconds period) {
    auto cfg = fake.config();
    cfg.token_file = d.path() + "/token";
    std::ofstream(cfg.token_file) << "test-token\n";
    cfg.token_reload = period;
    return client(cfg);
}

/// Kubelet's way of rotating a projected token: the new file is renamed over the old one.
void rotate_token(const TempDir& d, const std::string& token) {
    std::ofstream(d.path() + "/token.new") << token << "\n";
    std::filesystem::rename(d.path() + "/token.new", d.path() + "/token");
}

TEST(ApiToken, ARotatedTokenFileIsUsedOnceThePeriodHasPassed) {
    FakeApiServer fake;
    ASSERT_TRUE(fake.up());
    TempDir d;
    auto c = token_file_client(fake, d, std::chrono::milliseconds(300));
    ASSERT_TRUE(c->list(kSlices));
    fake.control(R"({"tokens": ["test-token", "t2"]})");
    rotate_token(d, "t2");
    ASSERT_TRUE(c->list(kSlices));  // within the period: the token we have
    std::this_thread::sleep_for(std::chrono::milliseconds(350));
    ASSERT_TRUE(c->list(kSlices));
    ASSERT_TRUE(c->list(kSlices));
    EXPECT_EQ(fake.tokens(), (std::vector<std::string>{"test-token", "test-token", "t2", "t2"}));
}

TEST(ApiToken, A401RereadsTheTokenFileAndRetriesOnceWithTheNewToken) {
    FakeApiServer fake;
    ASSERT_TRUE(fake.up());
    TempDir d;
    auto c = token_file_client(fake, d, std::chrono::hours(1));
    ASSERT_TRUE(c->list(kSlices));
    rotate_token(d, "t2");
    fake.control(R"({"tokens": ["t2"]})");  // the old token has expired
    auto r = c->list(kSlices);
    EXPECT_TRUE(r) << r.error().what();
    EXPECT_EQ(fake.tokens(), (std::vector<std::string>{"test-token", "test-token", "t2"}))
        << "exactly one retry";
}

TEST(ApiToken, A401WithAnUnchangedTokenIsTheErrorWithoutALoop) {
    FakeApiServer fake;
    ASSERT_TRUE(fake.up());
    TempDir d;
    auto c = token_file_client(fake, d, std::chrono::hours(1));
    fake.control(R"({"tokens": ["t2"]})");
    auto r = c->list(kSlices);
    ASSERT_FALSE(r);
    EXPECT_EQ(r.error().code(), Errc::Permission);
    EXPECT_EQ(r.error().what(),
              "API server " + fake.url() +
                  ": GET /apis/resource.k8s.io/v1/resourceslices: 401 Unauthorized: Unauthorized "
                  "(the token in '" +
                  d.path() + "/token' has not changed)");
    EXPECT_EQ(fake.tokens(), (std::vector<std::string>{"test-token"}));
}

TEST(ApiToken, ClientsOnSeveralThreadsSeeTheRotation) {
    FakeApiServer fake;
    ASSERT_TRUE(fake.up());
    TempDir d;
    auto c = token_file_client(fake, d, std::chrono::hours(1));
    std::atomic<int> failed{0};
    std::atomic<bool> rotated{false};
    std::vector<std::thread> threads;
    // each thread lists before the rotation and goes on for three lists after it (a fixed count
    // could all be done before the rotation on a fast machine)
    for (int t = 0; t < 4; ++t)
        threads.emplace_back([&] {
            for (int after = 0; after < 3;) {
                const bool was_rotated = rotated.load();
                if (!c->list(kSlices)) ++failed;
                after += was_rotated;
            }
        });
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
    rotate_token(d, "t2");
    fake.control(R"({"tokens": ["t2"]})");
    rotated = true;
    for (auto& t : threads) t.join();
    EXPECT_EQ(failed, 0);
    EXPECT_EQ(fake.tokens().back(), "t2");
}

/// One LIST against `fake` answering 429 or 503 with Retry-After once: its result and time.
std::pair<inject::Result<Json>, std::chrono::milliseconds> list_after(
    const FakeApiServer& fake, const std::string& control, std::chrono::milliseconds timeout) {
    auto cfg = fake.config();
    cfg.timeout = timeout;
    auto c = client(cfg);
    fake.control(control);
    const auto t0 = std::chrono::steady_clock::now();
    auto r = c->list(kSlices);
    return {std::move(r), std::chrono::duration_cast<std::chrono::milliseconds>(
                              std::chrono::steady_clock::now() - t0)};
}

TEST(ApiClient, A429WaitsTheRetryAfterSecondsThenRetriesOnce) {
    for (const char* control :
         {R"({"fail_429": 1, "retry_after": 1})", R"({"fail_503": 1, "retry_after": 1})"}) {
        FakeApiServer fake;
        ASSERT_TRUE(fake.up());
        auto [r, ms] = list_after(fake, control, std::chrono::milliseconds(5000));
        EXPECT_TRUE(r) << control << ": " << r.error().what();
        EXPECT_GE(ms.count(), 1000) << control << ": the config's backoff is 10 ms";
        EXPECT_LT(ms.count(), 2500) << control;
        EXPECT_EQ(fake.tokens().size(), 2U) << control << ": one retry";
    }
}

TEST(ApiClient, ARetryAfterPastTheTimeoutIsTheErrorAtOnce) {
    FakeApiServer fake;
    ASSERT_TRUE(fake.up());
    auto [r, ms] =
        list_after(fake, R"({"fail_429": 5, "retry_after": 5})", std::chrono::milliseconds(2000));
    ASSERT_FALSE(r);
    EXPECT_LT(ms.count(), 1000);
    EXPECT_EQ(r.error().what(),
              "GET /apis/resource.k8s.io/v1/resourceslices: 429 Too Many Requests: fake-apiserver: "
              "injected 429 (Retry-After 5 s is past the call's 2000 ms timeout)");
    EXPECT_EQ(fake.tokens().size(), 1U);
}

TEST(ApiClient, ClientCertificateFromPemTextAuthenticates) {
    FakeApiServer fake;
    ASSERT_TRUE(fake.up());
    auto cfg = fake.config();
    cfg.token.clear();
    cfg.ca_file.clear();
    cfg.ca_data = slurp(fake.dir() + "/ca.crt");
    cfg.cert_data = slurp(fake.dir() + "/client.crt");
    cfg.key_data = slurp(fake.dir() + "/client.key");
    auto c = client(cfg);
    auto r = c->list(kSlices);
    EXPECT_TRUE(r) << r.error().what();
}

TEST(ApiClient, RetriesAfterOne500) {
    FakeApiServer fake;
    ASSERT_TRUE(fake.up());
    auto c = client(fake.config());
    fake.control(R"({"fail_500": 1})");
    auto r = c->list(kSlices);
    EXPECT_TRUE(r) << r.error().what();
    EXPECT_EQ(Json::parse(fake.read("control.json"))["fail_500"], 0) << "the 500 was served once";
}

/// One LIST against `fake` with the faults `control` set, by a client with `retries`.
inject::Result<Json> list_with_fault(
    const FakeApiServer& fake, const std::string& control, int retries,
    std::chrono::milliseconds timeout = std::chrono::milliseconds(5000)) {
    auto cfg = fake.config();
    cfg.retries = retries;
    cfg.timeout = timeout;
    auto c = client(cfg);
    fake.control(control);
    return c->list(kSlices);
}

/// The Io error of a LIST that must fail (an Internal error, and a test failure, if it did not).
inject::Error list_io_error(const FakeApiServer& fake, const std::string& control, int retries,
                            std::chrono::milliseconds timeout = std::chrono::milliseconds(5000)) {
    auto r = list_with_fault(fake, control, retries, timeout);
    if (r) {
        ADD_FAILURE() << "the LIST worked with " << control;
        return {Errc::Internal, "no error"};
    }
    EXPECT_EQ(r.error().code(), Errc::Io);
    return std::move(r).error();
}

TEST(ApiClient, GivesUpOn500AfterTheRetries) {
    FakeApiServer fake;
    ASSERT_TRUE(fake.up());
    const auto e = list_io_error(fake, R"({"fail_500": 5})", 2);
    EXPECT_EQ(e.what(),
              "GET /apis/resource.k8s.io/v1/resourceslices: 500 Internal Server Error: "
              "fake-apiserver: injected failure");
    EXPECT_EQ(Json::parse(fake.read("control.json"))["fail_500"], 2) << "1 attempt + 2 retries";
}

TEST(ApiClient, SlowServerTimesOutWithinTheBound) {
    FakeApiServer fake;
    ASSERT_TRUE(fake.up());
    const auto t0 = std::chrono::steady_clock::now();
    const auto e = list_io_error(fake, R"({"slow_ms": 3000})", 1, std::chrono::milliseconds(200));
    const auto ms = std::chrono::duration_cast<std::chrono::milliseconds>(
        std::chrono::steady_clock::now() - t0);
    EXPECT_NE(e.what().find("GET /apis/resource.k8s.io/v1/resourceslices: Timeout was reached"),
              std::string::npos)
        << e.what();
    EXPECT_NE(e.what().find("(after 2 attempts)"), std::string::npos) << e.what();
    EXPECT_LT(ms.count(), 1500) << "2 x 200 ms + backoff";
}

TEST(ApiClient, ServerThatClosesConnectionsIsAnIoError) {
    FakeApiServer fake;
    ASSERT_TRUE(fake.up());
    const auto e = list_io_error(fake, R"({"down": true})", 1);
    EXPECT_NE(e.what().find("Server returned nothing"), std::string::npos) << e.what();
    EXPECT_TRUE(list_with_fault(fake, "{}", 0)) << "back up: the next call works";
}

TEST(ApiClient, CaThatDoesNotVerifyTheServerIsAClearErrorWithoutRetries) {
    FakeApiServer fake;
    ASSERT_TRUE(fake.up());
    auto cfg = fake.config();
    cfg.ca_file = fake.dir() + "/other-ca.crt";
    cfg.backoff = std::chrono::milliseconds(2000);  // a retry would show in the time taken
    auto c = client(cfg);
    const auto t0 = std::chrono::steady_clock::now();
    auto r = c->list(kSlices);
    ASSERT_FALSE(r);
    EXPECT_LT(std::chrono::steady_clock::now() - t0, std::chrono::milliseconds(1500));
    EXPECT_EQ(r.error().code(), Errc::Io);
    EXPECT_EQ(r.error().what().rfind(
                  "GET /apis/resource.k8s.io/v1/resourceslices: TLS: the server's certificate "
                  "does not verify against the CA ('" +
                      cfg.ca_file + "'): SSL certificate problem: ",
                  0),
              0U)
        << r.error().what();
    EXPECT_TRUE(fake.writes().empty());
}

TEST(ApiClient, RefusesPlainHttp) {
    k8s::api::Config cfg;
    cfg.server = "http://127.0.0.1:8080";
    auto c = Client::create(cfg);
    ASSERT_FALSE(c);
    EXPECT_EQ(c.error().what(), "API server 'http://127.0.0.1:8080': want an https:// URL");
}

TEST(ApiClient, UpdateWithRetryRereadsAfterAConflict) {
    FakeApiServer fake;
    ASSERT_TRUE(fake.up());
    auto c = client(fake.config());
    ASSERT_TRUE(c->create(kSlices, slice("s", "n")));
    fake.control(R"({"conflict_409": 1})");
    int calls = 0;
    auto r = c->update_with_retry(std::string(kSlices) + "/s", [&](Json& o) {
        ++calls;
        o["spec"]["pool"]["generation"] = 7;
        return true;
    });
    ASSERT_TRUE(r) << r.error().what();
    EXPECT_EQ(calls, 2);
    EXPECT_EQ((*r)["spec"]["pool"]["generation"], 7);
    const auto before = fake.writes().size();
    auto same = c->update_with_retry(std::string(kSlices) + "/s", [](Json&) { return false; });
    ASSERT_TRUE(same);
    EXPECT_EQ(fake.writes().size(), before) << "nothing to change: no PUT";
}

TEST(ApiClient, UpdateWithRetryGivesUpAfterTheRetries) {
    FakeApiServer fake;
    ASSERT_TRUE(fake.up());
    auto cfg = fake.config();
    cfg.retries = 1;
    auto c = client(cfg);
    ASSERT_TRUE(c->create(kSlices, slice("s", "n")));
    fake.control(R"({"conflict_409": 5})");
    auto r = c->update_with_retry(std::string(kSlices) + "/s", [](Json&) { return true; });
    ASSERT_FALSE(r);
    EXPECT_EQ(r.error().code(), Errc::Conflict);
}

struct DiscoveryCase {
    const char* name;
    const char* offered;
    const char* want;  ///< empty: an error
};

class ApiDiscovery : public testing::TestWithParam<DiscoveryCase> {};

TEST_P(ApiDiscovery, PicksV1ThenV1beta1) {
    FakeApiServer fake(GetParam().offered);
    ASSERT_TRUE(fake.up());
    auto c = client(fake.config());
    auto v = c->resource_api_version();
    if (*GetParam().want) {
        ASSERT_TRUE(v) << v.error().what();
        EXPECT_EQ(*v, GetParam().want);
    } else {
        ASSERT_FALSE(v);
        EXPECT_EQ(v.error().code(), inject::Errc::Unsupported);
        EXPECT_EQ(v.error().what(),
                  "GET /apis/resource.k8s.io: the server offers neither v1 nor v1beta1 (offers: "
                  "v1alpha3)");
    }
}

INSTANTIATE_TEST_SUITE_P(Versions, ApiDiscovery,
                         testing::Values(DiscoveryCase{"Both", "v1,v1beta1", "v1"},
                                         DiscoveryCase{"BetaFirst", "v1beta1,v1", "v1"},
                                         DiscoveryCase{"V1Only", "v1", "v1"},
                                         DiscoveryCase{"BetaOnly", "v1beta1", "v1beta1"},
                                         DiscoveryCase{"AlphaOnly", "v1alpha3", ""}),
                         [](const auto& i) { return std::string(i.param.name); });

TEST(ApiClient, ServerMinorVersion) {
    FakeApiServer fake("v1", {"--kube-minor", "35"});
    ASSERT_TRUE(fake.up());
    auto c = client(fake.config());
    auto m = c->server_minor();
    ASSERT_TRUE(m) << m.error().what();
    EXPECT_EQ(*m, 35);
}

}  // namespace
