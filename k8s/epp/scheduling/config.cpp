// SPDX-License-Identifier: Apache-2.0
#include "epp/scheduling/config.hpp"

#include <yaml-cpp/yaml.h>

#include <fstream>
#include <set>
#include <sstream>
#include <stdexcept>

#include "k8s/duration.hpp"
#include "k8s/yaml_json.hpp"

namespace epp {
namespace {

const std::set<std::string>& scorer_types() {
    static const std::set<std::string> t{"queue-scorer",        "kv-cache-utilization-scorer",
                                         "prefix-cache-scorer", "lora-affinity-scorer",
                                         "gcu-memory-scorer",   "active-request-scorer"};
    return t;
}
const std::set<std::string>& picker_types() {
    static const std::set<std::string> t{"max-score-picker", "random-picker", "round-robin-picker"};
    return t;
}
const std::set<std::string>& filter_types() {
    static const std::set<std::string> t{"decode-filter", "prefill-filter"};
    return t;
}
// Accepted for upstream compatibility; they configure what we always do.
const std::set<std::string>& other_types() {
    static const std::set<std::string> t{"single-profile-handler",      "disagg-profile-handler",
                                         "prefix-based-pd-decider",     "utilization-detector",
                                         "metrics-data-source",         "core-metrics-extractor",
                                         "approx-prefix-cache-producer"};
    return t;
}

// Errors name the source, the key path and the reason, on one line.
struct Reader {
    const std::string& source;
    [[noreturn]] void fail(const std::string& key, const std::string& why) const {
        throw std::runtime_error(source + ": " + key + ": " + why);
    }
    template <typename T>
    T get(const YAML::Node& n, const std::string& key, const char* want) const {
        try {
            return n.as<T>();
        } catch (const YAML::Exception&) {
            fail(key, std::string("want ") + want);
        }
    }
    double number(const YAML::Node& n, const std::string& key, double lo, double hi) const {
        double v = get<double>(n, key, "a number");
        if (v < lo || v > hi)
            fail(key, "want a number from " + fmt(lo) + " to " + fmt(hi) + ", got " + fmt(v));
        return v;
    }
    int integer(const YAML::Node& n, const std::string& key, int lo, int hi) const {
        int v = get<int>(n, key, "an integer");
        if (v < lo || v > hi)
            fail(key, "want an integer from " + std::to_string(lo) + " to " + std::to_string(hi) +
                          ", got " + std::to_string(v));
        return v;
    }
    std::chrono::milliseconds duration(const YAML::Node& n, const std::string& key,
                                       std::chrono::milliseconds lo,
                                       std::chrono::milliseconds hi) const {
        auto r = k8s::parse_duration(key, get<std::string>(n, key, "a duration"), lo, hi);
        if (!r) throw std::runtime_error(source + ": " + r.error().message());
        return *r;
    }
    static std::string fmt(double v) {
        std::ostringstream o;
        o << v;
        return o.str();
    }
    // Every key of map `n` must be one of `known`.
    void only(const YAML::Node& n, const std::string& key,
              const std::set<std::string>& known) const {
        if (!n) return;
        if (!n.IsMap()) fail(key, "want a map");
        for (const auto& kv : n) {
            auto k = kv.first.as<std::string>();
            if (!known.count(k)) fail(key + "." + k, "unknown key");
        }
    }
};

struct Plugin {
    std::string type;
    YAML::Node params;
    std::string key;  // "plugins[i]"
};

void apply_plugin(const Reader& rd, const Plugin& p, SchedulerConfig& c) {
    const YAML::Node& q = p.params;
    const std::string k = p.key + ".parameters";
    auto has = [&](const char* name) { return q && q[name]; };
    if (p.type == "prefix-cache-scorer" || p.type == "approx-prefix-cache-producer") {
        rd.only(q, k,
                {"blockSizeTokens", "averageCharactersPerToken", "maxPrefixBlocksToMatch",
                 "lruCapacityPerServer", "autoTune"});
        if (has("blockSizeTokens"))
            c.prefix.block_tokens =
                rd.integer(q["blockSizeTokens"], k + ".blockSizeTokens", 1, 4096);
        if (has("averageCharactersPerToken"))
            c.prefix.chars_per_token =
                rd.integer(q["averageCharactersPerToken"], k + ".averageCharactersPerToken", 1, 64);
        if (has("maxPrefixBlocksToMatch"))
            c.prefix.max_blocks =
                rd.integer(q["maxPrefixBlocksToMatch"], k + ".maxPrefixBlocksToMatch", 1, 65536);
        if (has("lruCapacityPerServer"))
            c.prefix.lru_capacity = static_cast<size_t>(
                rd.integer(q["lruCapacityPerServer"], k + ".lruCapacityPerServer", 1, 100000000));
        if (has("autoTune"))
            c.prefix_auto_tune = rd.get<bool>(q["autoTune"], k + ".autoTune", "true or false");
    } else if (p.type == "active-request-scorer") {
        rd.only(q, k, {"requestTimeout"});
        if (has("requestTimeout"))
            c.active_request_timeout = rd.duration(q["requestTimeout"], k + ".requestTimeout",
                                                   std::chrono::seconds(1), std::chrono::hours(24));
    } else if (p.type == "gcu-memory-scorer") {
        rd.only(q, k, {"minFreeFraction"});
        if (has("minFreeFraction"))
            c.gcu_min_free = rd.number(q["minFreeFraction"], k + ".minFreeFraction", 0, 1);
    } else if (p.type == "prefix-based-pd-decider") {
        rd.only(q, k, {"nonCachedTokens"});
        if (has("nonCachedTokens"))
            c.pd.non_cached_tokens =
                rd.integer(q["nonCachedTokens"], k + ".nonCachedTokens", 0, 10000000);
    } else if (p.type == "disagg-profile-handler") {
        rd.only(q, k, {"profiles", "deciders"});
        c.pd.enabled = true;
        if (has("profiles")) {
            rd.only(q["profiles"], k + ".profiles", {"decode", "prefill"});
            if (q["profiles"]["decode"])
                c.pd.decode_profile =
                    rd.get<std::string>(q["profiles"]["decode"], k + ".profiles.decode", "a name");
            if (q["profiles"]["prefill"])
                c.pd.prefill_profile = rd.get<std::string>(q["profiles"]["prefill"],
                                                           k + ".profiles.prefill", "a name");
        }
    } else if (p.type == "utilization-detector") {
        rd.only(q, k,
                {"queueDepthThreshold", "kvCacheUtilThreshold", "metricsStalenessThreshold",
                 "headroom"});
        auto& s = c.saturation;
        if (has("queueDepthThreshold"))
            s.queue_threshold =
                rd.number(q["queueDepthThreshold"], k + ".queueDepthThreshold", 0.001, 1e6);
        if (has("kvCacheUtilThreshold"))
            s.kv_threshold =
                rd.number(q["kvCacheUtilThreshold"], k + ".kvCacheUtilThreshold", 0.001, 1);
        if (has("headroom")) s.headroom = rd.number(q["headroom"], k + ".headroom", 0, 10);
        if (has("metricsStalenessThreshold"))
            s.staleness =
                rd.duration(q["metricsStalenessThreshold"], k + ".metricsStalenessThreshold",
                            std::chrono::milliseconds(10), std::chrono::hours(1));
    } else if (p.type == "core-metrics-extractor") {
        rd.only(q, k, {"defaultEngine"});
        if (has("defaultEngine")) {
            auto name = rd.get<std::string>(q["defaultEngine"], k + ".defaultEngine", "a name");
            auto e = engine_from_name(name);
            if (!e)
                rd.fail(k + ".defaultEngine",
                        "unknown engine '" + name + "' (want vllm, sglang or llamacpp)");
            c.default_engine = e;
        }
    }
}

ProfileConfig read_profile(const Reader& rd, const YAML::Node& n, const std::string& key,
                           const std::map<std::string, Plugin>& plugins) {
    rd.only(n, key, {"name", "plugins"});
    ProfileConfig p;
    if (!n["name"]) rd.fail(key + ".name", "missing");
    p.name = rd.get<std::string>(n["name"], key + ".name", "a name");
    const YAML::Node refs = n["plugins"];
    if (!refs || !refs.IsSequence() || refs.size() == 0)
        rd.fail(key + ".plugins", "want a list of pluginRef");
    bool picker = false;
    for (size_t i = 0; i < refs.size(); ++i) {
        const std::string rk = key + ".plugins[" + std::to_string(i) + "]";
        rd.only(refs[i], rk, {"pluginRef", "weight"});
        if (!refs[i]["pluginRef"]) rd.fail(rk + ".pluginRef", "missing");
        auto ref = rd.get<std::string>(refs[i]["pluginRef"], rk + ".pluginRef", "a plugin name");
        auto it = plugins.find(ref);
        if (it == plugins.end()) rd.fail(rk + ".pluginRef", "no plugin named '" + ref + "'");
        const std::string& type = it->second.type;
        bool scorer = scorer_types().count(type) > 0;
        if (refs[i]["weight"] && !scorer) rd.fail(rk + ".weight", "'" + ref + "' is not a scorer");
        if (scorer) {
            double w = refs[i]["weight"] ? rd.number(refs[i]["weight"], rk + ".weight", 0, 1e6) : 1;
            p.scorers.push_back({type, w});
        } else if (picker_types().count(type)) {
            if (picker) rd.fail(rk + ".pluginRef", "a second picker in profile '" + p.name + "'");
            picker = true;
            p.picker.type = type;
            const YAML::Node& q = it->second.params;
            const std::string pk = it->second.key + ".parameters";
            rd.only(q, pk, {"maxNumOfEndpoints"});
            if (q && q["maxNumOfEndpoints"])
                p.picker.max_endpoints =
                    rd.integer(q["maxNumOfEndpoints"], pk + ".maxNumOfEndpoints", 1, 100);
        } else if (filter_types().count(type)) {
            p.filters.push_back(type);
        } else {
            rd.fail(rk + ".pluginRef",
                    "'" + ref + "' (" + type + ") is not a filter, scorer or picker");
        }
    }
    return p;
}

// modelRewrites: [{name, rules}], rules as the InferenceModelRewrite CRD's spec.rules.
void read_rewrites(const Reader& rd, const YAML::Node& list, SchedulerConfig& c) {
    if (!list.IsSequence()) rd.fail("modelRewrites", "want a list of {name, rules}");
    std::set<std::string> names;
    for (size_t i = 0; i < list.size(); ++i) {
        const std::string key = "modelRewrites[" + std::to_string(i) + "]";
        rd.only(list[i], key, {"name", "rules"});
        if (!list[i]["name"]) rd.fail(key + ".name", "missing");
        ModelRewrite rw;
        rw.name = rd.get<std::string>(list[i]["name"], key + ".name", "a name");
        if (rw.name.empty()) rd.fail(key + ".name", "want a name");
        if (!names.insert(rw.name).second)
            rd.fail(key + ".name", "a second rewrite named '" + rw.name + "'");
        auto rules = parse_rewrite_rules(k8s::yaml_to_json(list[i]["rules"]), key + ".rules");
        if (!rules) throw std::runtime_error(rd.source + ": " + rules.error().what());
        rw.rules = std::move(*rules);
        c.model_rewrites.push_back(std::move(rw));
    }
}

}  // namespace

SchedulerConfig default_config() {
    SchedulerConfig c;
    c.profiles.push_back({"default",
                          {},
                          {{"queue-scorer", 2},
                           {"kv-cache-utilization-scorer", 2},
                           {"prefix-cache-scorer", 3},
                           {"gcu-memory-scorer", 1},
                           {"active-request-scorer", 1}},
                          {}});
    return c;
}

SchedulerConfig parse_config(std::string_view yaml, const std::string& source) {
    Reader rd{source};
    YAML::Node root;
    try {
        root = YAML::Load(std::string(yaml));
    } catch (const YAML::Exception& e) {
        throw std::runtime_error(source + ": line " + std::to_string(e.mark.line + 1) + ": " +
                                 e.msg);
    }
    if (!root.IsMap()) rd.fail("(top)", "want a map (an EndpointPickerConfig)");
    rd.only(root, "(top)",
            {"apiVersion", "kind", "plugins", "schedulingProfiles", "objectives", "modelRewrites",
             "flowControl", "saturationDetector", "data", "featureGates"});
    if (root["kind"] && root["kind"].as<std::string>("") != "EndpointPickerConfig")
        rd.fail("kind", "want EndpointPickerConfig");
    SchedulerConfig c;
    std::map<std::string, Plugin> plugins;
    if (const YAML::Node ps = root["plugins"]) {
        if (!ps.IsSequence()) rd.fail("plugins", "want a list");
        for (size_t i = 0; i < ps.size(); ++i) {
            const std::string key = "plugins[" + std::to_string(i) + "]";
            rd.only(ps[i], key, {"name", "type", "parameters"});
            if (!ps[i]["type"]) rd.fail(key + ".type", "missing");
            Plugin p{rd.get<std::string>(ps[i]["type"], key + ".type", "a plugin type"),
                     ps[i]["parameters"], key};
            if (!scorer_types().count(p.type) && !picker_types().count(p.type) &&
                !filter_types().count(p.type) && !other_types().count(p.type))
                rd.fail(key + ".type", "unknown plugin type '" + p.type + "'");
            std::string name = ps[i]["name"]
                                   ? rd.get<std::string>(ps[i]["name"], key + ".name", "a name")
                                   : p.type;
            if (plugins.count(name)) rd.fail(key + ".name", "a second plugin named '" + name + "'");
            apply_plugin(rd, p, c);
            plugins.emplace(name, std::move(p));
        }
    }
    if (const YAML::Node sp = root["schedulingProfiles"]) {
        if (!sp.IsSequence()) rd.fail("schedulingProfiles", "want a list");
        for (size_t i = 0; i < sp.size(); ++i)
            c.profiles.push_back(
                read_profile(rd, sp[i], "schedulingProfiles[" + std::to_string(i) + "]", plugins));
    } else {
        c.profiles = default_config().profiles;
    }
    std::set<std::string> names;
    for (const auto& p : c.profiles)
        if (!names.insert(p.name).second)
            rd.fail("schedulingProfiles", "two profiles named '" + p.name + "'");
    if (c.pd.enabled) {
        if (!names.count(c.pd.decode_profile))
            rd.fail("schedulingProfiles",
                    "no profile '" + c.pd.decode_profile + "' for disagg-profile-handler");
        if (!names.count(c.pd.prefill_profile))
            rd.fail("schedulingProfiles",
                    "no profile '" + c.pd.prefill_profile + "' for disagg-profile-handler");
    }
    if (const YAML::Node obj = root["objectives"]) {
        if (!obj.IsSequence()) rd.fail("objectives", "want a list of {name, priority}");
        for (size_t i = 0; i < obj.size(); ++i) {
            const std::string key = "objectives[" + std::to_string(i) + "]";
            rd.only(obj[i], key, {"name", "priority"});
            if (!obj[i]["name"]) rd.fail(key + ".name", "missing");
            if (!obj[i]["priority"]) rd.fail(key + ".priority", "missing");
            c.priorities[rd.get<std::string>(obj[i]["name"], key + ".name", "a name")] =
                rd.integer(obj[i]["priority"], key + ".priority", -1000000, 1000000);
        }
    }
    if (const YAML::Node mr = root["modelRewrites"]) read_rewrites(rd, mr, c);
    if (const YAML::Node fc = root["flowControl"]) {
        rd.only(fc, "flowControl", {"maxRequests", "defaultRequestTTL"});
        if (fc["maxRequests"])
            c.flow.max_requests = static_cast<size_t>(
                rd.integer(fc["maxRequests"], "flowControl.maxRequests", 1, 10000000));
        if (fc["defaultRequestTTL"])
            c.flow.ttl = rd.duration(fc["defaultRequestTTL"], "flowControl.defaultRequestTTL",
                                     std::chrono::milliseconds(1), std::chrono::hours(1));
    }
    return c;
}

SchedulerConfig load_config(const std::string& path) {
    std::ifstream in(path);
    if (!in) throw std::runtime_error(path + ": cannot read the config file");
    std::stringstream ss;
    ss << in.rdbuf();
    return parse_config(ss.str(), path);
}

}  // namespace epp
