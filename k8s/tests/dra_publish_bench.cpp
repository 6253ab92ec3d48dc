// SPDX-License-Identifier: Apache-2.0
// Publishing ResourceSlices for 64 cards (issue 13's budget: under 50 ms): build_slices plus the
// LIST and the POSTs to fake_apiserver.py on loopback over TLS, from an empty pool each time
// (the slices are deleted between runs, untimed), and the steady state (nothing changed: one
// LIST), and one ResourceClaim GET. Medians of --runs runs. A report, never a pass/fail test.
//
//   build/dev/k8s/tests/dra-publish-bench [runs]
#include <algorithm>
#include <cstdio>
#include <cstdlib>

#include "dra/publisher.hpp"
#include "dra_hosts.hpp"
#include "fake_apiserver.hpp"

namespace {

using Clock = std::chrono::steady_clock;

double ms_since(Clock::time_point t0) {
    return std::chrono::duration<double, std::milli>(Clock::now() - t0).count();
}

double median(std::vector<double> v) {
    std::sort(v.begin(), v.end());
    return v.empty() ? 0 : v[v.size() / 2];
}

int bench(const k8s_test::FakeApiServer& fake, dra::DrsMode mode, const char* label, int runs) {
    auto c = k8s::api::Client::create(fake.config());
    if (!c) {
        std::fprintf(stderr, "error: %s\n", c.error().what().c_str());
        return 1;
    }
    std::shared_ptr<k8s::api::Client> client = std::move(*c);
    dra::SliceOptions o;
    o.node_name = "bench-node";
    o.drs = mode;
    dra::Publisher p(client, o);
    const auto host = k8s_test::s60_host(64, mode != dra::DrsMode::Instances);
    std::vector<double> fresh, steady, build;
    std::size_t slices = 0;
    for (int i = 0; i < runs; ++i) {
        if (auto r = p.remove_all(); !r) {
            std::fprintf(stderr, "error: %s\n", r.error().what().c_str());
            return 1;
        }
        auto t0 = Clock::now();
        auto r = p.publish(host);
        fresh.push_back(ms_since(t0));
        if (!r) {
            std::fprintf(stderr, "error: %s\n", r.error().what().c_str());
            return 1;
        }
        slices = static_cast<std::size_t>(r->created);
        t0 = Clock::now();
        const auto built = dra::build_slices(host, o);
        build.push_back(ms_since(t0));
        t0 = Clock::now();
        r = p.publish(host);
        steady.push_back(ms_since(t0));
        if (!r || r->unchanged == 0) {
            std::fprintf(stderr, "error: the second publish changed something\n");
            return 1;
        }
    }
    std::printf(
        "%-28s %zu slice(s): publish from empty median %.2f ms (min %.2f, max %.2f); unchanged "
        "median %.2f "
        "ms; build_slices alone median %.3f ms\n",
        label, slices, median(fresh), *std::min_element(fresh.begin(), fresh.end()),
        *std::max_element(fresh.begin(), fresh.end()), median(steady), median(build));
    return 0;
}

/// One ResourceClaim GET on a warm connection (what NodePrepareResources spends on the API).
int bench_claim_get(const k8s_test::FakeApiServer& fake, int runs) {
    fake.put_claim("default", "c",
                   R"({"metadata": {"name": "c", "namespace": "default", "uid": "u-1"}})");
    auto c = k8s::api::Client::create(fake.config());
    if (!c) return 1;
    std::vector<double> t;
    for (int i = 0; i < runs; ++i) {
        const auto t0 = Clock::now();
        auto r = (*c)->get("/apis/resource.k8s.io/v1/namespaces/default/resourceclaims/c");
        t.push_back(ms_since(t0));
        if (!r) {
            std::fprintf(stderr, "error: %s\n", r.error().what().c_str());
            return 1;
        }
    }
    std::printf("%-28s median %.2f ms (first, with the TLS handshake, %.2f ms)\n",
                "ResourceClaim GET", median(t), t[0]);
    return 0;
}

}  // namespace

int main(int argc, char** argv) {
    const int runs = argc > 1 ? std::max(1, std::atoi(argv[1])) : 50;
    k8s_test::FakeApiServer fake("v1");
    if (!fake.up()) {
        std::fprintf(stderr, "error: fake_apiserver.py did not start\n");
        return 1;
    }
    std::printf("64 S60 cards, resource.k8s.io/v1, loopback TLS to fake_apiserver.py, %d runs\n",
                runs);
    int rc = bench(fake, dra::DrsMode::Instances, "whole cards (64 devices)", runs);
    rc |= bench(fake, dra::DrsMode::Counters, "DRS counters (448 devices)", runs);
    rc |= bench_claim_get(fake, runs);
    return rc;
}
