// SPDX-License-Identifier: Apache-2.0
#include "epp/pool/endpoint_source.hpp"

#include <algorithm>
#include <charconv>
#include <set>

#include "epp/pool/pool_watch.hpp"
#include "inject/text.hpp"
#include "k8s/apiserver.hpp"

namespace epp {

using inject::Errc;
using inject::fail;

namespace {

/// A DNS-1123 label (a namespace): [a-z0-9-], at most 63, alphanumeric at both ends.
bool dns_label(std::string_view s) {
    const auto alnum = [](char c) { return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9'); };
    return !s.empty() && s.size() <= 63 && alnum(s.front()) && alnum(s.back()) &&
           std::all_of(s.begin(), s.end(), [&](char c) { return alnum(c) || c == '-'; });
}

/// A DNS-1123 subdomain (an object name): dot-separated labels, at most 253.
bool dns_subdomain(std::string_view s) {
    if (s.empty() || s.size() > 253) return false;
    const auto labels = inject::text::split(s, '.');
    return std::all_of(labels.begin(), labels.end(),
                       [](const std::string& l) { return dns_label(l); });
}

bool http_url(std::string_view s) {
    for (std::string_view scheme : {"http://", "https://"})
        if (s.size() > scheme.size() && s.substr(0, scheme.size()) == scheme) return true;
    return false;
}

/// "host:port" (or "[v6]:port") checked; the reason it is not, or empty.
std::string address_problem(std::string_view a) {
    std::string_view host, port;
    if (!a.empty() && a.front() == '[') {
        const auto close = a.find(']');
        if (close == std::string_view::npos || close + 1 >= a.size() || a[close + 1] != ':')
            return "want [ipv6]:port";
        host = a.substr(1, close - 1);
        port = a.substr(close + 2);
    } else {
        const auto colon = a.rfind(':');
        if (colon == std::string_view::npos) return "want host:port[@namespace/pod]";
        host = a.substr(0, colon);
        port = a.substr(colon + 1);
        if (host.find(':') != std::string_view::npos) return "an IPv6 address wants brackets";
    }
    if (host.empty()) return "no host";
    if (host.find_first_of(" \t/@,") != std::string_view::npos)
        return "a bad character in the host";
    int n = 0;
    const auto [end, ec] = std::from_chars(port.data(), port.data() + port.size(), n);
    if (port.empty() || ec != std::errc() || end != port.data() + port.size() || n < 1 || n > 65535)
        return "port '" + std::string(port) + "' is not a number from 1 to 65535";
    return {};
}

/// The fixed list of a standalone run.
class StaticSource final : public EndpointSource {
public:
    explicit StaticSource(std::vector<Target> t) : targets_(std::move(t)) {}
    void start(std::function<void(std::vector<Target>)> on_change, ObjectivesHandler,
               RewritesHandler) override {
        on_change(targets_);
    }
    void stop() override {}
    [[nodiscard]] bool synced() const override { return true; }

private:
    std::vector<Target> targets_;
};

}  // namespace

inject::Result<std::vector<Target>> parse_endpoints(const std::string& list,
                                                    const std::string& gcu_exporter) {
    if (!gcu_exporter.empty() && !http_url(gcu_exporter))
        return fail(Errc::InvalidInput,
                    "--gcu-exporter '" + gcu_exporter + "': want an http:// or https:// URL");
    std::vector<Target> out;
    std::set<std::string> seen;
    for (const auto& raw : inject::text::split(list, ',')) {
        const std::string entry(inject::text::trim(raw));
        const auto bad = [&](const std::string& why) {
            return fail(Errc::InvalidInput, "--endpoints entry '" + entry + "': " + why);
        };
        if (entry.empty())
            return fail(Errc::InvalidInput, "--endpoints '" + list + "': an empty entry");
        Target t;
        const auto at = entry.find('@');
        t.address = entry.substr(0, at);
        if (const auto why = address_problem(t.address); !why.empty()) return bad(why);
        if (at != std::string::npos) {
            const auto parts = inject::text::split(std::string_view(entry).substr(at + 1), '/');
            if (parts.size() != 2 || !dns_label(parts[0]) || !dns_subdomain(parts[1]))
                return bad("want @namespace/pod after the address, each a DNS-1123 name");
            t.ns = parts[0];
            t.pod = parts[1];
        }
        if (!seen.insert(t.address).second) return bad("the address is listed twice");
        t.metrics_url = "http://" + t.address + "/metrics";
        t.gcu_metrics_url = gcu_exporter;
        out.push_back(std::move(t));
    }
    return out;
}

inject::Result<std::unique_ptr<EndpointSource>> EndpointSource::create(PoolOptions o) {
    if (o.endpoints.empty() == o.pool_name.empty())
        return fail(Errc::InvalidInput, "want exactly one of --endpoints and --pool-name");
    if (!o.endpoints.empty()) {
        INJECT_TRY(auto targets, parse_endpoints(o.endpoints, o.gcu_exporter));
        return std::unique_ptr<EndpointSource>(new StaticSource(std::move(targets)));
    }
    if (!dns_subdomain(o.pool_name))
        return fail(Errc::InvalidInput,
                    "--pool-name '" + o.pool_name + "': not a DNS-1123 subdomain");
    if (!dns_label(o.pool_namespace))
        return fail(Errc::InvalidInput,
                    "--pool-namespace '" + o.pool_namespace + "': not a DNS-1123 label");
    if (!o.exporter_selector.empty() && !dns_label(o.exporter_namespace))
        return fail(Errc::InvalidInput, "--gcu-exporter-namespace '" + o.exporter_namespace +
                                            "': not a DNS-1123 label");
    if (!o.gcu_exporter.empty() && !http_url(o.gcu_exporter))
        return fail(Errc::InvalidInput,
                    "--gcu-exporter '" + o.gcu_exporter + "': want an http:// or https:// URL");
    auto cfg = o.kubeconfig.empty() ? k8s::api::in_cluster_config()
                                    : k8s::api::load_kubeconfig(o.kubeconfig);
    if (!cfg) return fail(cfg.error());
    INJECT_TRY(auto client, k8s::api::Client::create(std::move(*cfg)));
    return std::unique_ptr<EndpointSource>(new PoolWatch(std::move(o), std::move(client)));
}

}  // namespace epp
