// SPDX-License-Identifier: Apache-2.0
#include "k8s/lease.hpp"

#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <thread>

#include "inject/log.hpp"

namespace k8s {

using inject::Errc;
using Clock = std::chrono::steady_clock;
using Json = api::Json;

namespace {

using api::str;

}  // namespace

std::string micro_time(std::chrono::system_clock::time_point t) {
    const auto us =
        std::chrono::duration_cast<std::chrono::microseconds>(t.time_since_epoch()).count();
    const std::time_t s = static_cast<std::time_t>(us / 1000000);
    std::tm tm{};
    gmtime_r(&s, &tm);
    char buf[40];
    std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%S", &tm);
    char out[64];
    std::snprintf(out, sizeof out, "%s.%06lldZ", buf, static_cast<long long>(us % 1000000));
    return out;
}

namespace {

/// Set by release(): the renewal thread stops trying (it would take a released Lease again).
std::atomic<bool> releasing{false};

/// One try: take the Lease when it is free or expired, renew it when ours. True when ours.
inject::Result<bool> try_lease(api::Client& c, const LeaderOptions& o, std::string& seen_record,
                               Clock::time_point& seen_at) {
    const std::string coll = "/apis/coordination.k8s.io/v1/namespaces/" + o.ns + "/leases";
    const std::string now = micro_time(std::chrono::system_clock::now());
    auto cur = c.get(coll + "/" + o.name);
    if (!cur && cur.error().code() == Errc::NotFound) {
        Json lease = {{"apiVersion", "coordination.k8s.io/v1"},
                      {"kind", "Lease"},
                      {"metadata", {{"name", o.name}, {"namespace", o.ns}}},
                      {"spec",
                       {{"holderIdentity", o.identity},
                        {"leaseDurationSeconds", o.lease_duration.count()},
                        {"acquireTime", now},
                        {"renewTime", now},
                        {"leaseTransitions", 0}}}};
        auto r = c.create(coll, lease);
        if (!r && r.error().code() == Errc::Conflict) return false;
        if (!r) return inject::fail(std::move(r).error());
        return true;
    }
    if (!cur) return inject::fail(std::move(cur).error());
    Json lease = *cur;
    Json& spec = lease["spec"];
    const std::string holder = str(spec, "holderIdentity");
    // Expiry by our own clock: when the record last changed as we saw it (client-go does the
    // same: clocks of two nodes are never compared).
    const std::string record = holder + "|" + str(spec, "renewTime");
    if (record != seen_record) seen_record = record, seen_at = Clock::now();
    const bool expired = Clock::now() - seen_at > o.lease_duration;
    if (holder != o.identity && !holder.empty() && !expired) return false;
    if (holder != o.identity) {
        spec["acquireTime"] = now;
        spec["leaseTransitions"] = spec.value("leaseTransitions", 0) + 1;
        spec["holderIdentity"] = o.identity;
        spec["leaseDurationSeconds"] = o.lease_duration.count();
    }
    spec["renewTime"] = now;
    auto r = c.update(coll + "/" + o.name, lease);  // carries resourceVersion: a race is a 409
    if (!r && r.error().code() == Errc::Conflict) return false;
    if (!r) return inject::fail(std::move(r).error());
    if (holder != o.identity)
        inject::log::info("leader election: {}/{} acquired by {} (was '{}')", o.ns, o.name,
                          o.identity, holder);
    return true;
}

}  // namespace

inject::Result<void> lead(api::Client& client, const LeaderOptions& o) {
    std::string seen;
    Clock::time_point seen_at = Clock::now();
    inject::log::info("leader election: waiting for lease {}/{} as {}", o.ns, o.name, o.identity);
    for (;;) {
        auto r = try_lease(client, o, seen, seen_at);
        if (r && *r) break;
        if (!r) inject::log::warn("leader election: {}", r.error().what());
        std::this_thread::sleep_for(o.retry_period);
    }
    std::thread([&client, o] {
        std::string s;
        Clock::time_point at = Clock::now();
        auto last_ok = Clock::now();
        for (;;) {
            std::this_thread::sleep_for(o.retry_period);
            if (releasing.load()) continue;
            auto r = try_lease(client, o, s, at);
            if (r && *r) {
                last_ok = Clock::now();
                continue;
            }
            if (!r) inject::log::warn("leader election: renewing: {}", r.error().what());
            if ((r && !*r) || Clock::now() - last_ok > o.renew_deadline) {
                inject::log::warn(
                    "leader election: lost lease {}/{}: exiting so another replica leads", o.ns,
                    o.name);
                std::_Exit(1);
            }
        }
    }).detach();
    return inject::ok();
}

inject::Result<bool> release(api::Client& client, const LeaderOptions& o) {
    releasing.store(true);  // the renewal thread must not take it back meanwhile
    const std::string path =
        "/apis/coordination.k8s.io/v1/namespaces/" + o.ns + "/leases/" + o.name;
    INJECT_TRY(Json lease, client.get(path));
    Json& spec = lease["spec"];
    if (str(spec, "holderIdentity") != o.identity) return false;
    spec["holderIdentity"] = "";
    spec["leaseDurationSeconds"] = 1;
    spec["renewTime"] = micro_time(std::chrono::system_clock::now());
    INJECT_TRY(Json r, client.update(path, lease));  // a 409: someone else holds it by now
    (void)r;
    inject::log::info("leader election: released lease {}/{}", o.ns, o.name);
    return true;
}

}  // namespace k8s
