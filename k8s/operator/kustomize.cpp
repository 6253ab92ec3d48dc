// SPDX-License-Identifier: Apache-2.0
// kustomize's engine (kustomize.hpp): resources / namespace / images / patches (JSON 6902) /
// configMapGenerator over yaml-cpp. `kubectl kustomize` is the reference: operator_render.bats
// compares the two.
#include "operator/kustomize.hpp"

#include <openssl/sha.h>
#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <fstream>
#include <map>
#include <regex>
#include <set>
#include <sstream>
#include <string_view>
#include <utility>

#include "k8s/reflector.hpp"
#include "k8s/yaml_json.hpp"

namespace gpu_operator {

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

using k8s::api::str;

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
                return inject::fail(
                    Errc::InvalidInput,
                    kfile.string() + ": patch on " + k8s::object_key(o.obj) + ": " + e.what());
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
                                         const std::string& folder, std::vector<Object>& out) {
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
        out.push_back({std::move(cm), folder, {}, !opts.value("disableNameSuffixHash", false)});
    }
    return inject::ok();
}

}  // namespace

std::string content_hash(const Json& data) {
    return configmap_hash(data);
}

void append_hex(std::string& out, unsigned char b) {
    static constexpr std::string_view kHex = "0123456789abcdef";
    out += kHex[b >> 4];
    out += kHex[b & 0xf];
}

bool kustomize_cluster_scoped(const std::string& kind) {
    return kClusterScoped.count(kind) != 0;
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
        for (auto& o : objs) out.push_back({std::move(o), folder, {}, false});
    }
    INJECT_TRY_VOID(
        generate_configmaps(k.value("configMapGenerator", Json::array()), kfile, folder, out));
    INJECT_TRY_VOID(apply_patches(k.value("patches", Json::array()), kfile, out));
    if (!str(k, "namespace").empty()) set_namespace(str(k, "namespace"), out);
    set_images(k.value("images", Json::array()), out);
    return out;
}

inject::Result<std::vector<Json>> parse_yaml_stream(const std::string& text,
                                                    const std::string& what) {
    std::vector<Json> out;
    try {
        for (const auto& doc : YAML::LoadAll(text)) {
            Json j = k8s::yaml_to_json(doc);
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

}  // namespace gpu_operator
