// SPDX-License-Identifier: Apache-2.0
// The EPP's Kubernetes endpoint source (epp/pool/pool_watch.hpp) against fake_apiserver.py:
// started before the InferencePool CRD exists (the kind answers 404), it follows the pool once
// the CRD and the pool are created; pods that come, turn Ready or not, go, and a pool whose
// ports or selector change reach the callback within a second each; the exporter of each pod's
// node is found; a deleted pool leaves no endpoint and is not synced.
#include <gtest/gtest.h>

#include <condition_variable>
#include <mutex>

#include "epp/pool/endpoint_source.hpp"
#include "fake_apiserver.hpp"

namespace {

using namespace std::chrono_literals;
using nlohmann::json;
using Clock = std::chrono::steady_clock;

const std::string kPools = "/apis/inference.networking.k8s.io/v1/namespaces/serving/inferencepools";
const std::string kPods = "/api/v1/namespaces/serving/pods";
const std::string kExporterPods = "/api/v1/namespaces/enflame-system/pods";

/// The CRD as far as the fake serves a kind: group, names, scope, a served version.
json pool_crd() {
    return {{"apiVersion", "apiextensions.k8s.io/v1"},
            {"kind", "CustomResourceDefinition"},
            {"metadata", {{"name", "inferencepools.inference.networking.k8s.io"}}},
            {"spec",
             {{"group", "inference.networking.k8s.io"},
              {"scope", "Namespaced"},
              {"names", {{"plural", "inferencepools"}, {"kind", "InferencePool"}}},
              {"versions",
               {{{"name", "v1"},
                 {"served", true},
                 {"storage", true},
                 {"subresources", {{"status", json::object()}}},
                 {"schema",
                  {{"openAPIV3Schema",
                    {{"type", "object"}, {"x-kubernetes-preserve-unknown-fields", true}}}}}}}}}}};
}

json pool(json labels, json ports) {
    return {{"apiVersion", "inference.networking.k8s.io/v1"},
            {"kind", "InferencePool"},
            {"metadata", {{"name", "llama"}, {"namespace", "serving"}}},
            {"spec", {{"selector", {{"matchLabels", labels}}}, {"targetPorts", ports}}}};
}

/// Every set of Targets the source handed on, in order.
class Seen {
public:
    void add(std::vector<epp::Target> t) {
        {
            const std::lock_guard lock(mu_);
            sets_.push_back(std::move(t));
        }
        cv_.notify_all();
    }
    /// The time until the last set handed on is `want` (addresses), at most `limit`.
    std::chrono::milliseconds until(const std::vector<std::string>& want,
                                    std::chrono::milliseconds limit = 3000ms) {
        const auto start = Clock::now();
        std::unique_lock lock(mu_);
        cv_.wait_for(lock, limit,
                     [&] { return !sets_.empty() && addresses(sets_.back()) == want; });
        return std::chrono::duration_cast<std::chrono::milliseconds>(Clock::now() - start);
    }
    std::vector<epp::Target> last() {
        const std::lock_guard lock(mu_);
        return sets_.empty() ? std::vector<epp::Target>{} : sets_.back();
    }
    std::size_t count() {
        const std::lock_guard lock(mu_);
        return sets_.size();
    }
    static std::vector<std::string> addresses(const std::vector<epp::Target>& ts) {
        std::vector<std::string> out;
        for (const auto& t : ts) out.push_back(t.address);
        return out;
    }

private:
    std::mutex mu_;
    std::condition_variable cv_;
    std::vector<std::vector<epp::Target>> sets_;
};

class PoolWatchTest : public ::testing::Test {
protected:
    void SetUp() override {
        ASSERT_TRUE(api_.up());
        auto c = k8s::api::Client::create(api_.config());
        ASSERT_TRUE(c) << c.error().what();
        client_ = std::move(*c);
        // a kubeconfig for the source, as the EPP gets one
        kubeconfig_ = api_.dir() + "/kubeconfig";
        std::ofstream(kubeconfig_) << "apiVersion: v1\nkind: Config\ncurrent-context: c\n"
                                   << "clusters: [{name: k, cluster: {server: '" << api_.url()
                                   << "', certificate-authority: '" << api_.dir()
                                   << "/ca.crt'}}]\nusers: [{name: u, user: {token: test-token}}]\n"
                                   << "contexts: [{name: c, context: {cluster: k, user: u}}]\n";
    }

    std::unique_ptr<epp::EndpointSource> start() {
        epp::PoolOptions o;
        o.pool_name = "llama";
        o.pool_namespace = "serving";
        o.kubeconfig = kubeconfig_;
        auto s = epp::EndpointSource::create(o);
        EXPECT_TRUE(s) << s.error().what();
        if (!s) return nullptr;
        (*s)->start([this](std::vector<epp::Target> t) { seen_.add(std::move(t)); }, {}, {});
        return std::move(*s);
    }

    /// A pod created, then its status written as kubelet does (a create drops status).
    void put_pod(const std::string& collection, const std::string& name, json labels,
                 const std::string& ip, bool ready, const std::string& node = "node-a") {
        json p = {{"apiVersion", "v1"},
                  {"kind", "Pod"},
                  {"metadata", {{"name", name}, {"labels", labels}}},
                  {"spec",
                   {{"nodeName", node},
                    {"containers",
                     {{{"name", "main"},
                       {"image", "x"},
                       {"ports", {{{"name", "metrics"}, {"containerPort", 9400}}}}}}}}}};
        auto r = client_->create(collection, p);
        ASSERT_TRUE(r) << r.error().what();
        set_ready(collection, name, ip, ready);
    }
    void set_ready(const std::string& collection, const std::string& name, const std::string& ip,
                   bool ready) {
        auto r = client_->patch_merge(
            collection + "/" + name + "/status",
            {{"status",
              {{"podIP", ip},
               {"conditions", {{{"type", "Ready"}, {"status", ready ? "True" : "False"}}}}}}});
        ASSERT_TRUE(r) << r.error().what();
    }

    k8s_test::FakeApiServer api_;
    std::unique_ptr<k8s::api::Client> client_;
    std::string kubeconfig_;
    Seen seen_;
};

TEST_F(PoolWatchTest, TargetsFollowThePoolAndItsPodsWithinASecond) {
    auto source = start();
    ASSERT_TRUE(source);
    std::this_thread::sleep_for(300ms);
    EXPECT_FALSE(source->synced()) << "synced with no InferencePool kind served";
    EXPECT_EQ(seen_.count(), 0u);

    // the CRD, then the pool: listed once the kind is served (retried every second)
    ASSERT_TRUE(
        client_->create("/apis/apiextensions.k8s.io/v1/customresourcedefinitions", pool_crd()));
    const json app = {{"app", "llama"}};
    ASSERT_TRUE(
        client_->create(kPools, pool(app, json::array({{{"number", 8000}}, {{"number", 8001}}}))));
    EXPECT_LT(seen_.until({}), 2500ms);
    ASSERT_EQ(seen_.count(), 1u);
    EXPECT_TRUE(source->synced());

    put_pod(kPods, "a", app, "10.0.0.1", true);
    EXPECT_LT(seen_.until({"10.0.0.1:8000", "10.0.0.1:8001"}), 1000ms);
    const auto a = seen_.last()[0];
    EXPECT_EQ(a.pod, "a");
    EXPECT_EQ(a.ns, "serving");
    EXPECT_EQ(a.node, "node-a");
    EXPECT_EQ(a.labels.at("app"), "llama");
    EXPECT_EQ(a.metrics_url, "http://10.0.0.1:8000/metrics");

    // the exporter on node-a, found by its label in its own namespace
    put_pod(kExporterPods, "exp-a", {{"app.kubernetes.io/name", "enflame-gcu-exporter"}},
            "10.9.0.1", true);
    const auto exporter_seen = Clock::now();
    for (; Clock::now() - exporter_seen < 1s; std::this_thread::sleep_for(10ms))
        if (seen_.last()[0].gcu_metrics_url == "http://10.9.0.1:9400/metrics") break;
    EXPECT_EQ(seen_.last()[0].gcu_metrics_url, "http://10.9.0.1:9400/metrics");

    put_pod(kPods, "b", app, "10.0.0.2", true, "node-b");
    EXPECT_LT(seen_.until({"10.0.0.1:8000", "10.0.0.1:8001", "10.0.0.2:8000", "10.0.0.2:8001"}),
              1000ms);
    EXPECT_EQ(seen_.last()[2].gcu_metrics_url, "") << "no exporter on node-b";

    // a pod that is not Ready, not labelled, and one turning unready then Ready again
    put_pod(kPods, "c-starting", app, "10.0.0.3", false);
    put_pod(kPods, "d-other", {{"app", "mistral"}}, "10.0.0.4", true);
    set_ready(kPods, "a", "10.0.0.1", false);
    EXPECT_LT(seen_.until({"10.0.0.2:8000", "10.0.0.2:8001"}), 1000ms);
    set_ready(kPods, "a", "10.0.0.1", true);
    EXPECT_LT(seen_.until({"10.0.0.1:8000", "10.0.0.1:8001", "10.0.0.2:8000", "10.0.0.2:8001"}),
              1000ms);

    ASSERT_TRUE(client_->remove(kPods + "/b"));
    EXPECT_LT(seen_.until({"10.0.0.1:8000", "10.0.0.1:8001"}), 1000ms);

    // the pool's ports, then its selector, changed
    ASSERT_TRUE(client_->patch_merge(kPools + "/llama",
                                     {{"spec", {{"targetPorts", {{{"number", 9000}}}}}}}));
    EXPECT_LT(seen_.until({"10.0.0.1:9000"}), 1000ms);
    ASSERT_TRUE(client_->patch_merge(
        kPools + "/llama", {{"spec", {{"selector", {{"matchLabels", {{"app", "mistral"}}}}}}}}));
    EXPECT_LT(seen_.until({"10.0.0.4:9000"}), 1000ms);

    // never the same set twice in a row
    const auto before = seen_.count();
    ASSERT_TRUE(
        client_->patch_merge(kPods + "/d-other", {{"metadata", {{"annotations", {{"x", "y"}}}}}}));
    std::this_thread::sleep_for(300ms);
    EXPECT_EQ(seen_.count(), before);

    ASSERT_TRUE(client_->remove(kPools + "/llama"));
    EXPECT_LT(seen_.until({}), 1000ms);
    EXPECT_FALSE(source->synced());
    source->stop();
}

TEST_F(PoolWatchTest, AWatchAnswered410ListsAgainAndKeepsFollowing) {
    ASSERT_TRUE(
        client_->create("/apis/apiextensions.k8s.io/v1/customresourcedefinitions", pool_crd()));
    const json app = {{"app", "llama"}};
    ASSERT_TRUE(client_->create(kPools, pool(app, json::array({{{"number", 8000}}}))));
    put_pod(kPods, "a", app, "10.0.0.1", true);
    auto source = start();
    ASSERT_TRUE(source);
    EXPECT_LT(seen_.until({"10.0.0.1:8000"}), 1000ms);
    api_.control(R"({"drop_watch": 1, "watch_gone": 1})");
    std::this_thread::sleep_for(300ms);
    api_.control("{}");
    put_pod(kPods, "b", app, "10.0.0.2", true);
    EXPECT_LT(seen_.until({"10.0.0.1:8000", "10.0.0.2:8000"}), 1000ms);
    source->stop();
}

}  // namespace
