// SPDX-License-Identifier: Apache-2.0
// The Prometheus Operator's objects a GpuResource can ask for (monitors.hpp).
#include "operator/monitors.hpp"

#include <algorithm>

#include "k8s/reflector.hpp"
#include "operator/components.hpp"

namespace gpu_operator {

using inject::Errc;

namespace {

using k8s::api::str;

/// The objects of deployments/monitoring/operator a GpuResource can ask for: which component's
/// field (spec.<component>.<field>: {enabled, interval, labels}) asks, and the object.
struct Monitor {
    const char* component;
    const char* field;
    const char* kind;
    const char* name;
};
constexpr Monitor kMonitors[] = {
    {"exporter", "serviceMonitor", "ServiceMonitor", "enflame-gcu-exporter"},
    {"exporter", "prometheusRule", "PrometheusRule", "enflame-gcu"},
    {"nodeExporter", "serviceMonitor", "ServiceMonitor", "enflame-node-exporter"},
    {"npd", "podMonitor", "PodMonitor", "enflame-npd"},
};

Json monitor_spec(const Json& spec, const Monitor& m) {
    return spec.value(m.component, Json::object()).value(m.field, Json::object());
}
bool asked(const Json& spec, const Monitor& m) {
    return enabled(spec, m.component) && monitor_spec(spec, m).value("enabled", false);
}

}  // namespace

/// The monitoring objects the CR asks for and the server serves, from
/// deployments/monitoring/operator, with the CR's labels and scrape interval.
inject::Result<std::vector<Object>> monitors(const std::string& manifests, const Json& spec,
                                             const Served& served) {
    std::vector<Object> out;
    const bool any = std::any_of(std::begin(kMonitors), std::end(kMonitors), [&](const Monitor& m) {
        return asked(spec, m) && served.monitoring.count(m.kind);
    });
    if (!any) return out;
    INJECT_TRY(const auto tree,
               load_dir(std::filesystem::path(manifests) / "monitoring" / "operator"));
    for (const auto& m : kMonitors) {
        if (!asked(spec, m) || !served.monitoring.count(m.kind)) continue;
        auto it = std::find_if(tree.begin(), tree.end(), [&](const Object& o) {
            return str(o.obj, "kind") == m.kind && str(o.obj["metadata"], "name") == m.name;
        });
        if (it == tree.end())
            return inject::fail(Errc::NotFound,
                                manifests + "/monitoring/operator: no " + m.kind + " " + m.name);
        Object o = *it;
        const Json ms = monitor_spec(spec, m);
        if (ms.contains("labels"))
            for (const auto& [k, v] : ms["labels"].items()) o.obj["metadata"]["labels"][k] = v;
        for (const char* list : {"endpoints", "podMetricsEndpoints"})
            if (!str(ms, "interval").empty() && o.obj["spec"].contains(list))
                for (auto& e : o.obj["spec"][list]) e["interval"] = ms["interval"];
        o.component = m.component;
        out.push_back(std::move(o));
    }
    return out;
}

std::vector<MonitorStatus> monitoring_status(const Json& spec, const Served& served,
                                             const std::vector<Object>& rendered) {
    std::vector<MonitorStatus> out;
    for (const auto& m : kMonitors) {
        if (!asked(spec, m)) continue;
        std::string msg = std::string("skipped: the API server does not serve ") +
                          kMonitoringGroupVersion + " " + m.kind +
                          " (install the Prometheus Operator's CRDs)";
        for (const auto& o : rendered)
            if (served.monitoring.count(m.kind) && str(o.obj, "kind") == m.kind &&
                str(o.obj["metadata"], "name") == m.name)
                msg = "applied " + k8s::object_key(o.obj);
        out.push_back({m.component, m.field, msg});
    }
    return out;
}

Json everything_on() {
    Json all = Json::object();
    for (const auto& c : components()) all[c.field]["enabled"] = true;
    for (const auto& m : kMonitors) all[m.component][m.field]["enabled"] = true;
    return all;
}

}  // namespace gpu_operator
