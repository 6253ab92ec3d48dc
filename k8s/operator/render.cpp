// SPDX-License-Identifier: Apache-2.0
// The operator's renderer: kustomize's resources / namespace / images / patches (JSON 6902) /
// configMapGenerator over yaml-cpp, then the GpuResource's fields. `kubectl kustomize` is the
// reference: a test compares the two for a default CR (tests/integration/operator.bats).
#include "render.hpp"

#include "inject/config.hpp"
#include "k8s/reflector.hpp"

#include <openssl/sha.h>
#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <map>
#include <regex>
#include <set>
#include <sstream>
#include <string_view>
#include <utility>

namespace op {

namespace fs = std::filesystem;
using inject::Errc;

namespace {

/// Kinds kustomize treats as cluster-scoped (its built-in schema): no namespace set on them.
/// DeviceClass is not among them, which is why overlays/dra removes the namespace kustomize
/// gives it; it is cluster-scoped for the API server all the same (path_of).
const std::set<std::string> kClusterScoped{"Namespace",
                                           "RuntimeClass",
                                           "ClusterRole",
                                           "ClusterRoleBinding",
                                           "CustomResourceDefinition",
                                           "PriorityClass",
                                           "StorageClass",
                                           "PersistentVolume",
                                           "Node",
                                           "APIService",
                                           "CSIDriver",
                                           "IngressClass",
                                           "ValidatingWebhookConfiguration",
                                           "MutatingWebhookConfiguration"};
const std::set<std::string> kServerClusterScoped{"DeviceClass", "GpuResource"};
/// What deployments/operator ships, so the operator never writes it: the stack's namespace and
/// the roles its daemons are bound to (writing a role would take `escalate`).
const std::set<std::string> kShippedWithOperator{"Namespace", "ClusterRole", "Role"};

/// deployments/ folder -> the GpuResource field that switches its objects.
const std::map<std::string, std::string> kComponentOf{{"installer", "toolkit"},
                                                      {"feature-discovery", "featureDiscovery"},
                                                      {"device-plugin", "devicePlugin"},
                                                      {"dra", "draDriver"},
                                                      {"exporter", "exporter"},
                                                      {"npd", "npd"},
                                                      {"nfd", "nfd"},
                                                      {"node-exporter", "nodeExporter"},
                                                      {"monitoring", "nodeExporter"}};

/// The CRD's defaults for `enabled` (a spec read from a file has none filled in).
const std::map<std::string, bool> kEnabledByDefault{
    {"toolkit", true},    {"featureDiscovery", true}, {"nfd", false}, {"devicePlugin", true},
    {"draDriver", false}, {"exporter", true},         {"npd", false}, {"nodeExporter", false}};

Json scalar(const YAML::Node& n) {
    const std::string& v = n.Scalar();
    if (n.Tag() != "?") return v;  // quoted: a string
    if (v.empty() || v == "~" || v == "null" || v == "Null" || v == "NULL") return nullptr;
    if (v == "true" || v == "True" || v == "TRUE") return true;
    if (v == "false" || v == "False" || v == "FALSE") return false;
    static const std::regex kInt("^[-+]?[0-9]+$"),
        kFloat("^[-+]?([0-9]*\\.[0-9]+|[0-9]+\\.[0-9]*)([eE][-+]?[0-9]+)?$");
    if (std::regex_match(v, kInt)) {
        try {
            return std::stoll(v);
        } catch (const std::out_of_range&) {
            return v;
        }
    }
    if (std::regex_match(v, kFloat)) return std::stod(v);
    return v;
}

Json to_json(const YAML::Node& n) {
    switch (n.Type()) {
        case YAML::NodeType::Map: {
            Json o = Json::object();
            for (const auto& kv : n) o[kv.first.Scalar()] = to_json(kv.second);
            return o;
        }
        case YAML::NodeType::Sequence: {
            Json a = Json::array();
            for (const auto& e : n) a.push_back(to_json(e));
            return a;
        }
        case YAML::NodeType::Scalar:
            return scalar(n);
        default:
            return nullptr;
    }
}

inject::Result<std::string> read_text(const fs::path& p) {
    std::ifstream in(p);
    if (!in) return inject::fail(Errc::NotFound, "reading '" + p.string() + "': cannot open it");
    std::stringstream ss;
    ss << in.rdbuf();
    return ss.str();
}

std::string group_of(const std::string& api_version) {
    const auto slash = api_version.find('/');
    return slash == std::string::npos ? "" : api_version.substr(0, slash);
}
std::string version_of(const std::string& api_version) {
    const auto slash = api_version.find('/');
    return slash == std::string::npos ? api_version : api_version.substr(slash + 1);
}

std::string str(const Json& j, const char* field) {
    return j.is_object() && j.contains(field) && j[field].is_string() ? j[field].get<std::string>()
                                                                      : "";
}

bool target_matches(const Json& target, const Json& obj) {
    const std::string av = str(obj, "apiVersion");
    auto is = [&](const char* f, const std::string& have) {
        const std::string want = str(target, f);
        return want.empty() || std::regex_match(have, std::regex(want));
    };
    return is("group", group_of(av)) && is("version", version_of(av)) &&
           is("kind", str(obj, "kind")) && is("name", str(obj["metadata"], "name")) &&
           is("namespace", str(obj["metadata"], "namespace"));
}

inject::Result<void> apply_patches(const Json& patches, const fs::path& kfile,
                                   std::vector<Object>& objs) {
    for (const auto& p : patches) {
        Json ops;
        if (p.contains("patch") && p["patch"].is_string()) {
            INJECT_TRY(auto docs, parse_yaml_stream(p["patch"].get<std::string>(),
                                                    kfile.string() + ": patches"));
            if (!docs.empty()) ops = docs[0];
        } else if (p.contains("path") && p["path"].is_string()) {
            INJECT_TRY(std::string text,
                       read_text(kfile.parent_path() / p["path"].get<std::string>()));
            INJECT_TRY(auto docs, parse_yaml_stream(text, p["path"].get<std::string>()));
            if (!docs.empty()) ops = docs[0];
        }
        if (!ops.is_array())
            return inject::fail(Errc::Unsupported,
                                kfile.string() +
                                    ": patches: only JSON 6902 patches (a list of ops) are "
                                    "supported by the operator's renderer");
        const Json target = p.value("target", Json::object());
        for (auto& o : objs) {
            if (!target_matches(target, o.obj)) continue;
            try {
                o.obj = o.obj.patch(ops);
            } catch (const nlohmann::json::exception& e) {
                return inject::fail(Errc::InvalidInput, kfile.string() + ": patch on " +
                                                            key_of(o.obj) + ": " + e.what());
            }
        }
    }
    return inject::ok();
}

void set_namespace(const std::string& ns, std::vector<Object>& objs) {
    for (auto& o : objs) {
        const std::string kind = str(o.obj, "kind");
        if (!kClusterScoped.count(kind)) o.obj["metadata"]["namespace"] = ns;
        if ((kind == "RoleBinding" || kind == "ClusterRoleBinding") && o.obj.contains("subjects"))
            for (auto& s : o.obj["subjects"])
                if (str(s, "kind") == "ServiceAccount") s["namespace"] = ns;
    }
}

/// An image reference's parts: name (registry/path), tag, digest.
struct ImageRef {
    std::string name, tag, digest;
    static ImageRef parse(std::string s) {
        ImageRef r;
        if (auto at = s.find('@'); at != std::string::npos)
            r.digest = s.substr(at + 1), s.resize(at);
        const auto colon = s.rfind(':');
        if (colon != std::string::npos && s.find('/', colon) == std::string::npos)
            r.tag = s.substr(colon + 1), s.resize(colon);
        r.name = s;
        return r;
    }
    std::string str() const {
        return name + (tag.empty() ? "" : ":" + tag) + (digest.empty() ? "" : "@" + digest);
    }
};

/// Every container (and init container) of a pod template or pod.
template <typename F>
void each_container(Json& obj, F&& f) {
    for (Json* ps : {obj.contains("spec") && obj["spec"].contains("template")
                         ? &obj["spec"]["template"]["spec"]
                         : (obj.contains("spec") ? &obj["spec"] : nullptr)}) {
        if (!ps || !ps->is_object()) continue;
        for (const char* list : {"initContainers", "containers"})
            if (ps->contains(list))
                for (auto& c : (*ps)[list]) f(c);
    }
}

void set_images(const Json& images, std::vector<Object>& objs) {
    for (auto& o : objs)
        each_container(o.obj, [&](Json& c) {
            if (!c.contains("image") || !c["image"].is_string()) return;
            ImageRef ref = ImageRef::parse(c["image"].get<std::string>());
            for (const auto& i : images) {
                if (str(i, "name") != ref.name) continue;
                if (!str(i, "newName").empty()) ref.name = str(i, "newName");
                if (!str(i, "newTag").empty()) ref.tag = str(i, "newTag");
                if (!str(i, "digest").empty()) ref.digest = str(i, "digest"), ref.tag.clear();
                c["image"] = ref.str();
                break;
            }
        });
}

/// A string as Go's encoding/json writes it (kustomize hashes that): HTML characters and the
/// line/paragraph separators escaped as \uXXXX, control characters too.
std::string go_json_string(const std::string& s) {
    std::string out = "\"";
    for (std::size_t i = 0; i < s.size(); ++i) {
        const auto c = static_cast<unsigned char>(s[i]);
        if (c == '"' || c == '\\') {
            out += '\\';
            out += static_cast<char>(c);
        } else if (c == '\n') {
            out += "\\n";
        } else if (c == '\r') {
            out += "\\r";
        } else if (c == '\t') {
            out += "\\t";
        } else if (c < 0x20 || c == '<' || c == '>' || c == '&') {
            out += "\\u00";
            append_hex(out, c);
        } else if (c == 0xe2 && i + 2 < s.size() && static_cast<unsigned char>(s[i + 1]) == 0x80 &&
                   (static_cast<unsigned char>(s[i + 2]) & 0xfe) == 0xa8) {
            out += static_cast<unsigned char>(s[i + 2]) == 0xa8 ? "\\u2028" : "\\u2029";
            i += 2;
        } else {
            out += static_cast<char>(c);
        }
    }
    return out + "\"";
}

/// kustomize's name suffix for a generated ConfigMap (api/hasher, v5.5 as kubectl 1.32 ships
/// it): sha256 of {"data":{...},"kind":"ConfigMap","name":""} as Go marshals it, its first ten
/// hex digits with 0 1 3 a e spelled g h k m t (no vowels, no word).
std::string configmap_hash(const Json& data) {
    std::string enc = "{\"data\":{";
    bool first = true;
    for (const auto& [k, v] : data.items()) {  // nlohmann's object: keys sorted, as Go's
        enc += (first ? "" : ",") + go_json_string(k) + ":" + go_json_string(v.get<std::string>());
        first = false;
    }
    enc += "},\"kind\":\"ConfigMap\",\"name\":\"\"}";
    unsigned char md[SHA256_DIGEST_LENGTH];
    SHA256(reinterpret_cast<const unsigned char*>(enc.data()), enc.size(), md);
    std::string h;
    for (int i = 0; i < 5; ++i) append_hex(h, md[i]);
    for (char& c : h) {
        const auto at = std::string_view("013ae").find(c);
        if (at != std::string_view::npos) c = "ghkmt"[at];
    }
    return h;
}

/// A configMapGenerator's ConfigMaps (files: KEY=PATH or PATH, literals: KEY=VALUE; options:
/// labels, annotations, disableNameSuffixHash). What kustomize has beyond that is refused.
inject::Result<void> generate_configmaps(const Json& gens, const fs::path& kfile,
                                         const std::string& component, std::vector<Object>& out) {
    const std::string where = kfile.string() + ": configMapGenerator";
    static const std::set<std::string> kGen{"name", "namespace", "files", "literals", "options"},
        kOpts{"labels", "annotations", "disableNameSuffixHash"};
    for (const auto& g : gens) {
        for (const auto& [f, _] : g.items())
            if (!kGen.count(f))
                return inject::fail(
                    Errc::Unsupported,
                    where + ": '" + f + "' is not supported by the operator's renderer");
        const Json opts = g.value("options", Json::object());
        for (const auto& [f, _] : opts.items())
            if (!kOpts.count(f))
                return inject::fail(
                    Errc::Unsupported,
                    where + ": options: '" + f + "' is not supported by the operator's renderer");
        if (str(g, "name").empty()) return inject::fail(Errc::InvalidInput, where + ": no name");
        Json cm = {{"apiVersion", "v1"},
                   {"kind", "ConfigMap"},
                   {"metadata", {{"name", str(g, "name")}}},
                   {"data", Json::object()}};
        if (!str(g, "namespace").empty()) cm["metadata"]["namespace"] = g["namespace"];
        for (const char* meta : {"labels", "annotations"})
            if (opts.contains(meta)) cm["metadata"][meta] = opts[meta];
        for (const auto& f : g.value("files", Json::array())) {
            const std::string spec = f.get<std::string>();
            const auto eq = spec.find('=');
            const std::string rel = eq == std::string::npos ? spec : spec.substr(eq + 1);
            const std::string key =
                eq == std::string::npos ? fs::path(rel).filename().string() : spec.substr(0, eq);
            INJECT_TRY(std::string body, read_text(kfile.parent_path() / rel));
            cm["data"][key] = body;
        }
        for (const auto& l : g.value("literals", Json::array())) {
            const std::string lit = l.get<std::string>();
            const auto eq = lit.find('=');
            if (eq == std::string::npos)
                return inject::fail(Errc::InvalidInput,
                                    where + ": literal '" + lit + "' is not KEY=VALUE");
            cm["data"][lit.substr(0, eq)] = lit.substr(eq + 1);
        }
        out.push_back({std::move(cm), component, !opts.value("disableNameSuffixHash", false)});
    }
    return inject::ok();
}

/// The content hash on each generated ConfigMap's name, and the new name wherever a pod
/// template in its namespace refers to it (volumes, projected volumes, env, envFrom), as
/// kustomize's name references do.
void suffix_generated(std::vector<Object>& objs) {
    for (auto& cm : objs) {
        if (!cm.generated) continue;
        cm.generated = false;
        const std::string old = str(cm.obj["metadata"], "name");
        const std::string ns = str(cm.obj["metadata"], "namespace");
        const std::string name = old + "-" + configmap_hash(cm.obj.value("data", Json::object()));
        cm.obj["metadata"]["name"] = name;
        auto fix = [&](Json& parent, const char* ref) {
            if (parent.is_object() && parent.contains(ref) && str(parent[ref], "name") == old)
                parent[ref]["name"] = name;
        };
        auto each = [](Json& parent, const char* list, const auto& f) {
            if (parent.is_object() && parent.contains(list) && parent[list].is_array())
                for (auto& e : parent[list]) f(e);
        };
        for (auto& o : objs) {
            if (str(o.obj["metadata"], "namespace") != ns || !o.obj.contains("spec") ||
                !o.obj["spec"].contains("template"))
                continue;
            each(o.obj["spec"]["template"]["spec"], "volumes", [&](Json& v) {
                fix(v, "configMap");
                if (v.contains("projected"))
                    each(v["projected"], "sources", [&](Json& src) { fix(src, "configMap"); });
            });
            each_container(o.obj, [&](Json& c) {
                each(c, "env", [&](Json& e) {
                    if (e.contains("valueFrom")) fix(e["valueFrom"], "configMapKeyRef");
                });
                each(c, "envFrom", [&](Json& e) { fix(e, "configMapRef"); });
            });
        }
    }
}

inject::Result<std::vector<Object>> load_dir(const fs::path& dir) {
    fs::path kfile = dir / "kustomization.yaml";
    if (!fs::exists(kfile)) kfile = dir / "kustomization.yml";
    INJECT_TRY(std::string text, read_text(kfile));
    INJECT_TRY(auto docs, parse_yaml_stream(text, kfile.string()));
    const Json k = docs.empty() ? Json::object() : docs[0];
    static const std::set<std::string> kKnown{
        "apiVersion", "kind", "resources", "namespace", "images", "patches", "configMapGenerator"};
    for (const auto& [field, _] : k.items())
        if (!kKnown.count(field))
            return inject::fail(Errc::Unsupported,
                                kfile.string() + ": '" + field +
                                    "' is not supported by the operator's renderer "
                                    "(resources, namespace, images, patches, "
                                    "configMapGenerator are)");
    const std::string folder = dir.filename().string();
    const auto comp = kComponentOf.find(folder);
    const std::string component = comp == kComponentOf.end() ? "base" : comp->second;
    std::vector<Object> out;
    for (const auto& r : k.value("resources", Json::array())) {
        const fs::path p = (dir / r.get<std::string>()).lexically_normal();
        if (fs::is_directory(p)) {
            INJECT_TRY(auto sub, load_dir(p));
            out.insert(out.end(), sub.begin(), sub.end());
            continue;
        }
        INJECT_TRY(std::string body, read_text(p));
        INJECT_TRY(auto objs, parse_yaml_stream(body, p.string()));
        for (auto& o : objs) out.push_back({std::move(o), component});
    }
    INJECT_TRY_VOID(
        generate_configmaps(k.value("configMapGenerator", Json::array()), kfile, component, out));
    INJECT_TRY_VOID(apply_patches(k.value("patches", Json::array()), kfile, out));
    if (!str(k, "namespace").empty()) set_namespace(str(k, "namespace"), out);
    set_images(k.value("images", Json::array()), out);
    return out;
}

// --- the GpuResource's fields ----------------------------------------------------------------

bool enabled(const Json& spec, const std::string& component) {
    if (component == "base") return true;
    const auto d = kEnabledByDefault.find(component);
    const bool def = d == kEnabledByDefault.end() || d->second;
    if (!spec.contains(component) || !spec[component].contains("enabled")) return def;
    return spec[component]["enabled"].get<bool>();
}

void set_image(Json& c, const Json& cs) {
    const std::string repo = str(cs, "repository"), image = str(cs, "image"),
                      version = str(cs, "version");
    if (repo.empty() && image.empty() && version.empty()) return;
    ImageRef ref = ImageRef::parse(str(c, "image"));
    const auto slash = ref.name.rfind('/');
    std::string r = slash == std::string::npos ? "" : ref.name.substr(0, slash);
    std::string n = slash == std::string::npos ? ref.name : ref.name.substr(slash + 1);
    if (!repo.empty()) r = repo;
    if (!image.empty()) n = image;
    ref.name = r.empty() ? n : r + "/" + n;
    if (!version.empty()) {
        if (version.rfind("sha256:", 0) == 0)
            ref.digest = version, ref.tag.clear();
        else
            ref.tag = version, ref.digest.clear();
    }
    c["image"] = ref.str();
}

void merge_env(Json& c, const Json& env) {
    if (!c.contains("env")) c["env"] = Json::array();
    for (const auto& e : env) {
        auto it = std::find_if(c["env"].begin(), c["env"].end(), [&](const Json& have) {
            return str(have, "name") == str(e, "name");
        });
        if (it != c["env"].end())
            *it = e;
        else
            c["env"].push_back(e);
    }
}

/// A component's settings on a DaemonSet's pod template (its first container is the daemon).
void customize_pods(Json& obj, const Json& cs, const Json& ds) {
    Json& tmpl = obj["spec"]["template"];
    Json& ps = tmpl["spec"];
    if (ps.contains("containers") && !ps["containers"].empty()) {
        Json& c = ps["containers"][0];
        set_image(c, cs);
        if (!str(cs, "imagePullPolicy").empty()) c["imagePullPolicy"] = cs["imagePullPolicy"];
        if (cs.contains("args") && !cs["args"].empty()) {
            const char* list = c.contains("command") ? "command" : "args";
            for (const auto& a : cs["args"]) c[list].push_back(a);
        }
        if (cs.contains("env") && !cs["env"].empty()) merge_env(c, cs["env"]);
        if (cs.contains("resources") && !cs["resources"].empty()) c["resources"] = cs["resources"];
    }
    if (cs.contains("imagePullSecrets") && !cs["imagePullSecrets"].empty()) {
        ps["imagePullSecrets"] = Json::array();
        for (const auto& s : cs["imagePullSecrets"])
            ps["imagePullSecrets"].push_back({{"name", s}});
    }
    if (cs.contains("nodeSelector"))
        for (const auto& [k, v] : cs["nodeSelector"].items()) ps["nodeSelector"][k] = v;
    for (const Json* src : {&ds, &cs})
        if (src->contains("tolerations"))
            for (const auto& t : (*src)["tolerations"]) ps["tolerations"].push_back(t);
    if (!str(cs, "priorityClassName").empty())
        ps["priorityClassName"] = cs["priorityClassName"];
    else if (!str(ds, "priorityClassName").empty())
        ps["priorityClassName"] = ds["priorityClassName"];
    for (const char* meta : {"labels", "annotations"})
        if (ds.contains(meta))
            for (const auto& [k, v] : ds[meta].items()) tmpl["metadata"][meta][k] = v;
    if (str(ds, "updateStrategy") == "OnDelete") {
        obj["spec"]["updateStrategy"] = {{"type", "OnDelete"}};
    } else if (ds.contains("maxUnavailable") && ds["maxUnavailable"] != 1) {
        obj["spec"]["updateStrategy"] = {
            {"type", "RollingUpdate"},
            {"rollingUpdate", {{"maxUnavailable", ds["maxUnavailable"]}}}};
    }
}

/// The toolkit config.toml a ConfigMap carries, pointed at a driver root other than the
/// node's / (the daemons see the host's / at /host; the DRA plugin also names the host path).
/// The DRA plugin's host-driver-root / host-dev-root are set where the ConfigMap has them (the
/// shipped one names host-driver-root = "/") and added after the section header where not.
std::string retarget_config(const std::string& toml, const std::string& root, bool dra) {
    std::istringstream in(toml);
    std::string line, out;
    std::vector<std::string> lines;
    std::size_t header = std::string::npos;
    bool host_driver = false, host_dev = false;
    auto starts = [&](std::string_view key) { return line.rfind(key, 0) == 0; };
    while (std::getline(in, line)) {
        // the CR's path goes in as a TOML string: quotes or newlines in it stay in the value
        if (starts("driver-root =") || starts("dev-root ="))
            line = line.substr(0, line.find('=')) + "= " + inject::config::toml_string("/host" + root);
        if (dra && (starts("host-driver-root =") || starts("host-dev-root ="))) {
            (starts("host-driver-root =") ? host_driver : host_dev) = true;
            line = line.substr(0, line.find('=')) + "= " + inject::config::toml_string(root);
        }
        if (line == "[enflame-container-cli]") header = lines.size();
        lines.push_back(line);
    }
    for (std::size_t i = 0; i < lines.size(); ++i) {
        out += lines[i] + "\n";
        if (dra && i == header) {
            if (!host_driver) out += "host-driver-root = " + inject::config::toml_string(root) + "\n";
            if (!host_dev) out += "host-dev-root = " + inject::config::toml_string(root) + "\n";
        }
    }
    return out;
}

void customize_host_paths(Object& o, const Json& spec) {
    const Json hp = spec.value("hostPaths", Json::object());
    const std::string root = hp.value("driverRoot", "/");
    const std::string kubelet = hp.value("kubeletRoot", "/var/lib/kubelet");
    const std::string kind = str(o.obj, "kind");
    // config.toml: the daemons' ConfigMaps; enflame-ctk.toml: NPD's plugin's
    for (const char* key : {"config.toml", "enflame-ctk.toml"})
        if (root != "/" && kind == "ConfigMap" && o.obj.contains("data") &&
            o.obj["data"].contains(key))
            o.obj["data"][key] = retarget_config(o.obj["data"][key].get<std::string>(), root,
                                                 o.component == "draDriver");
    if (kind != "DaemonSet") return;
    Json& ps = o.obj["spec"]["template"]["spec"];
    if (root != "/" && o.component == "toolkit")
        for (const auto& f : {"--driver-root=", "--dev-root="})
            ps["containers"][0]["command"].push_back(f + root);
    if (kubelet != "/var/lib/kubelet" && ps.contains("volumes"))
        for (auto& v : ps["volumes"]) {
            const std::string p = v.contains("hostPath") ? str(v["hostPath"], "path") : "";
            if (p.rfind("/var/lib/kubelet", 0) == 0) v["hostPath"]["path"] = kubelet + p.substr(16);
        }
}

void customize_toolkit(Object& o, const Json& tk) {
    if (str(o.obj, "kind") != "DaemonSet") return;
    Json& cmd = o.obj["spec"]["template"]["spec"]["containers"][0]["command"];
    const std::string runtime = tk.value("runtime", "auto");
    for (auto& a : cmd)
        if (a == "--runtime=auto" && runtime != "auto") a = "--runtime=" + runtime;
    if (tk.value("setAsDefault", false)) cmd.push_back("--set-as-default");
    if (tk.contains("acceptEnvvarWhenUnprivileged"))
        cmd.push_back(std::string("--accept-envvar-when-unprivileged=") +
                      (tk["acceptEnvvarWhenUnprivileged"].get<bool>() ? "true" : "false"));
}

/// spec.devicePlugin.sharing into the plugin's own config (plugin.yaml in its ConfigMap, the
/// format enflame-device-plugin(8) reads), and a summary of it on the plugin's pod template: the
/// plugin reads its config at start, so a change of it must replace the pods (the operator's
/// roll follows the template). No sharing: the tree's config and template as they are.
void customize_sharing(Object& o, const Json& dp) {
    const Json ts = dp.value("sharing", Json::object()).value("timeSlicing", Json::object());
    if (!ts.contains("replicas")) return;
    const long long replicas = ts["replicas"].get<long long>();
    const bool rename = ts.value("renameByDefault", false);
    const std::string kind = str(o.obj, "kind");
    if (kind == "ConfigMap" && o.obj.contains("data") && o.obj["data"].contains("plugin.yaml"))
        o.obj["data"]["plugin.yaml"] =
            "version: v1\nsharing:\n  timeSlicing:\n    renameByDefault: " +
            std::string(rename ? "true" : "false") +
            "\n    resources:\n    - name: enflame.com/gcu\n      replicas: " +
            std::to_string(replicas) + "\n";
    if (kind == "DaemonSet")
        o.obj["spec"]["template"]["metadata"]["annotations"]["enflame.com/sharing"] =
            "timeSlicing replicas=" + std::to_string(replicas) +
            " renameByDefault=" + (rename ? "true" : "false");
}

}  // namespace

inject::Result<std::vector<Json>> parse_yaml_stream(const std::string& text,
                                                    const std::string& what) {
    std::vector<Json> out;
    try {
        for (const auto& doc : YAML::LoadAll(text)) {
            Json j = to_json(doc);
            if (!j.is_null()) out.push_back(std::move(j));
        }
    } catch (const YAML::Exception& e) {
        return inject::fail(Errc::InvalidInput, "'" + what + "': line " +
                                                    std::to_string(e.mark.line + 1) + ": " + e.msg);
    }
    return out;
}

inject::Result<std::vector<Object>> kustomize(const std::string& dir) {
    INJECT_TRY(auto objs, load_dir(fs::path(dir)));
    suffix_generated(objs);
    return objs;
}

namespace {

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

/// The monitoring objects the CR asks for and the server serves, from
/// deployments/monitoring/operator, with the CR's labels and scrape interval.
inject::Result<std::vector<Object>> monitors(const std::string& manifests, const Json& spec,
                                             const Served& served) {
    std::vector<Object> out;
    const bool any = std::any_of(std::begin(kMonitors), std::end(kMonitors), [&](const Monitor& m) {
        return asked(spec, m) && served.monitoring.count(m.kind);
    });
    if (!any) return out;
    INJECT_TRY(const auto tree, load_dir(fs::path(manifests) / "monitoring" / "operator"));
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

}  // namespace

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
                msg = "applied " + key_of(o.obj);
        out.push_back({m.component, m.field, msg});
    }
    return out;
}

Json everything_on() {
    Json all = Json::object();
    for (const char* c : {"toolkit", "featureDiscovery", "nfd", "devicePlugin", "draDriver",
                          "exporter", "npd", "nodeExporter"})
        all[c]["enabled"] = true;
    for (const auto& m : kMonitors) all[m.component][m.field]["enabled"] = true;
    return all;
}

inject::Result<std::vector<Object>> render(const std::string& manifests, const Json& spec,
                                           const Served& served) {
    INJECT_TRY(auto objs, load_dir(fs::path(manifests)));
    std::set<std::string> have;
    for (const auto& o : objs) have.insert(key_of(o.obj));
    auto add = [&](std::vector<Object> more) {
        for (auto& o : more)
            if (have.insert(key_of(o.obj)).second) objs.push_back(std::move(o));
    };
    if (enabled(spec, "draDriver")) {
        INJECT_TRY(auto dra, load_dir(fs::path(manifests) / "overlays" /
                                      (served.dra_version == "v1beta1" ? "dra-v1beta1" : "dra")));
        add(std::move(dra));
    }
    // not in deployments/ (the default install): their own folders, as `kubectl apply -k` them
    for (const auto& [component, folder] : {std::pair{"nfd", "nfd"}, std::pair{"npd", "npd"},
                                            std::pair{"nodeExporter", "node-exporter"}})
        if (enabled(spec, component)) {
            INJECT_TRY(auto more, load_dir(fs::path(manifests) / folder));
            add(std::move(more));
        }
    INJECT_TRY(auto mon, monitors(manifests, spec, served));
    add(std::move(mon));
    std::vector<Object> out;
    const Json ds = spec.value("daemonsets", Json::object());
    for (auto& o : objs) {
        if (!enabled(spec, o.component) || kShippedWithOperator.count(str(o.obj, "kind"))) continue;
        const Json cs = spec.value(o.component, Json::object());
        if (str(o.obj, "kind") == "DaemonSet") customize_pods(o.obj, cs, ds);
        // NFD's master: the component's own settings, not the DaemonSets' (spec.daemonsets)
        if (str(o.obj, "kind") == "Deployment") customize_pods(o.obj, cs, Json::object());
        if (o.component == "toolkit") customize_toolkit(o, cs);
        if (o.component == "devicePlugin") customize_sharing(o, cs);
        customize_host_paths(o, spec);
        o.obj["metadata"]["labels"][kManagedBy] = kManagerName;
        out.push_back(std::move(o));
    }
    suffix_generated(out);
    return out;
}

std::string key_of(const Json& obj) { return k8s::object_key(obj); }

std::string plural_of(const std::string& kind) {
    std::string p = kind;
    std::transform(p.begin(), p.end(), p.begin(),
                   [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
    if (p.back() == 's') return p + "es";
    if (p.back() == 'y') return p.substr(0, p.size() - 1) + "ies";
    return p + "s";
}

std::string path_of(const Json& obj, bool collection) {
    const std::string av = str(obj, "apiVersion");
    const std::string kind = str(obj, "kind");
    std::string p = group_of(av).empty() ? "/api/" + av : "/apis/" + av;
    const std::string ns = str(obj.value("metadata", Json::object()), "namespace");
    if (!ns.empty() && !kClusterScoped.count(kind) &&
        !kServerClusterScoped.count(kind))
        p += "/namespaces/" + ns;
    p += "/" + plural_of(kind);
    if (!collection) p += "/" + str(obj["metadata"], "name");
    return p;
}

bool contains(const Json& have, const Json& want) {
    if (want.is_object()) {
        if (!have.is_object()) return false;
        for (const auto& [k, v] : want.items())
            if (!have.contains(k) || !contains(have[k], v)) return false;
        return true;
    }
    if (want.is_array()) {
        if (!have.is_array() || have.size() != want.size()) return false;
        for (std::size_t i = 0; i < want.size(); ++i)
            if (!contains(have[i], want[i])) return false;
        return true;
    }
    return have == want;
}

void append_hex(std::string& out, unsigned char b) {
    static constexpr std::string_view kHex = "0123456789abcdef";
    out += kHex[b >> 4];
    out += kHex[b & 0xf];
}

Json merge_patch(const Json& from, const Json& to) {
    if (!from.is_object() || !to.is_object()) return to;
    Json patch = Json::object();
    for (const auto& [k, v] : to.items())
        if (!from.contains(k) || from[k] != v) patch[k] = merge_patch(from.value(k, Json()), v);
    for (const auto& [k, v] : from.items())
        if (!to.contains(k)) patch[k] = nullptr;
    return patch;
}

}  // namespace op
