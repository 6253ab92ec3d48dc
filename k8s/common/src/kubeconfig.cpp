// SPDX-License-Identifier: Apache-2.0
// Where the API server is: the pod's service account (in cluster) or a kubeconfig file.
#include <yaml-cpp/yaml.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "inject/text.hpp"
#include "k8s/apiserver.hpp"

namespace k8s::api {

using inject::Errc;

namespace {

inject::Result<std::string> read_file(const std::string& path, const std::string& what) {
    std::ifstream in(path, std::ios::binary);
    if (!in) return inject::fail(inject::sys_error(what + ": reading '" + path + "'"));
    std::ostringstream s;
    s << in.rdbuf();
    return s.str();
}

std::string trim(const std::string& s) {
    return std::string(inject::text::trim_end(s, "\n\r "));
}

/// A kubeconfig being read: its path (for messages and relative file names) and the document.
struct Kubeconfig {
    std::string path;
    YAML::Node doc;

    [[nodiscard]] inject::Unexpected bad(const std::string& field, const std::string& why) const {
        return inject::fail(Errc::InvalidInput, "kubeconfig '" + path + "': " + field + ": " + why);
    }

    /// `section` ("clusters", "users", "contexts") entry called `name`, its inner map (`key`).
    [[nodiscard]] inject::Result<YAML::Node> named(const std::string& section,
                                                   const std::string& key,
                                                   const std::string& name) const {
        const YAML::Node list = doc[section];
        if (list && !list.IsSequence()) return bad(section, "want a list");
        if (list) {
            for (const auto& e : list) {
                if (e["name"] && e["name"].as<std::string>() == name) {
                    if (!e[key] || !e[key].IsMap())
                        return bad(section + "[" + name + "]." + key, "missing");
                    return e[key];
                }
            }
        }
        return bad(section, "no entry named '" + name + "'");
    }

    /// A file name from the kubeconfig: relative names are relative to its folder.
    [[nodiscard]] std::string file(const std::string& name) const {
        if (name.empty() || name.front() == '/') return name;
        return (std::filesystem::path(path).parent_path() / name).string();
    }

    /// `<field>-data` (base64, decoded) of `node`, empty when absent.
    [[nodiscard]] inject::Result<std::string> data(const YAML::Node& node, const std::string& where,
                                                   const std::string& field) const {
        if (!node[field] || !node[field].IsScalar()) return std::string();
        const auto text = node[field].as<std::string>();
        const std::vector<unsigned char> bytes = YAML::DecodeBase64(text);
        if (bytes.empty()) return bad(where + "." + field, "not valid base64");
        return std::string(bytes.begin(), bytes.end());
    }

    [[nodiscard]] std::string str(const YAML::Node& node, const std::string& field) const {
        return node[field] && node[field].IsScalar() ? node[field].as<std::string>()
                                                     : std::string();
    }
};

inject::Result<Config> from_kubeconfig(const Kubeconfig& kc) {
    Config cfg;
    const std::string ctx_name = kc.str(kc.doc, "current-context");
    if (ctx_name.empty()) return kc.bad("current-context", "missing");
    INJECT_TRY(const YAML::Node ctx, kc.named("contexts", "context", ctx_name));
    const std::string cluster_name = kc.str(ctx, "cluster");
    const std::string user_name = kc.str(ctx, "user");
    if (cluster_name.empty())
        return kc.bad("contexts[" + ctx_name + "].context.cluster", "missing");
    INJECT_TRY(const YAML::Node cluster, kc.named("clusters", "cluster", cluster_name));
    const std::string cwhere = "clusters[" + cluster_name + "].cluster";
    cfg.server = kc.str(cluster, "server");
    if (cfg.server.empty()) return kc.bad(cwhere + ".server", "missing");
    if (cluster["insecure-skip-tls-verify"] && cluster["insecure-skip-tls-verify"].as<bool>())
        return kc.bad(cwhere + ".insecure-skip-tls-verify",
                      "refused: the API server's certificate is always verified");
    cfg.ca_file = kc.file(kc.str(cluster, "certificate-authority"));
    INJECT_TRY(cfg.ca_data, kc.data(cluster, cwhere, "certificate-authority-data"));
    if (user_name.empty()) return kc.bad("contexts[" + ctx_name + "].context.user", "missing");
    INJECT_TRY(const YAML::Node user, kc.named("users", "user", user_name));
    const std::string uwhere = "users[" + user_name + "].user";
    for (const char* unsupported : {"exec", "auth-provider", "username"})
        if (user[unsupported])
            return kc.bad(uwhere + "." + unsupported,
                          "not supported (use a token or a client certificate)");
    cfg.token = kc.str(user, "token");
    if (const std::string tf = kc.file(kc.str(user, "tokenFile"));
        cfg.token.empty() && !tf.empty()) {
        INJECT_TRY(cfg.token,
                   read_token(tf, "kubeconfig '" + kc.path + "': " + uwhere + ".tokenFile"));
        cfg.token_file = tf;
    }
    cfg.cert_file = kc.file(kc.str(user, "client-certificate"));
    cfg.key_file = kc.file(kc.str(user, "client-key"));
    INJECT_TRY(cfg.cert_data, kc.data(user, uwhere, "client-certificate-data"));
    INJECT_TRY(cfg.key_data, kc.data(user, uwhere, "client-key-data"));
    const bool has_cert = !cfg.cert_file.empty() || !cfg.cert_data.empty();
    const bool has_key = !cfg.key_file.empty() || !cfg.key_data.empty();
    if (has_cert != has_key)
        return kc.bad(uwhere + (has_cert ? ".client-key" : ".client-certificate"),
                      "missing (a client certificate needs both)");
    if (cfg.token.empty() && !has_cert)
        return kc.bad(uwhere, "no token, tokenFile or client-certificate");
    return cfg;
}

}  // namespace

inject::Result<std::string> read_token(const std::string& path, const std::string& what) {
    INJECT_TRY(std::string t, read_file(path, what));
    t = trim(std::move(t));
    if (t.empty()) return inject::fail(Errc::InvalidInput, what + ": '" + path + "' is empty");
    return t;
}

inject::Result<Config> load_kubeconfig(const std::string& path) {
    INJECT_TRY(const std::string text, read_file(path, "kubeconfig"));
    Kubeconfig kc{path, {}};
    try {
        kc.doc = YAML::Load(text);
        if (!kc.doc.IsMap()) return kc.bad("top level", "want a map");
        return from_kubeconfig(kc);
    } catch (const YAML::Exception& e) {
        return inject::fail(Errc::InvalidInput, "kubeconfig '" + path + "': line " +
                                                    std::to_string(e.mark.line + 1) + ": " + e.msg);
    }
}

inject::Result<Config> in_cluster_config(const std::string& sa_dir) {
    const char* host = std::getenv("KUBERNETES_SERVICE_HOST");  // NOLINT(concurrency-mt-unsafe)
    const char* port = std::getenv("KUBERNETES_SERVICE_PORT");  // NOLINT(concurrency-mt-unsafe)
    if (!host || !*host)
        return inject::fail(Errc::NotFound,
                            "in-cluster config: KUBERNETES_SERVICE_HOST is not set");
    if (!port || !*port)
        return inject::fail(Errc::NotFound,
                            "in-cluster config: KUBERNETES_SERVICE_PORT is not set");
    Config cfg;
    const std::string h = host;
    cfg.server = "https://" + (h.find(':') != std::string::npos ? "[" + h + "]" : h) + ":" + port;
    cfg.token_file = sa_dir + "/token";
    INJECT_TRY(cfg.token, read_token(cfg.token_file, "in-cluster config: service-account token"));
    cfg.ca_file = sa_dir + "/ca.crt";
    if (!std::filesystem::exists(cfg.ca_file))
        return inject::fail(Errc::NotFound, "in-cluster config: service-account CA '" +
                                                cfg.ca_file + "' is missing");
    return cfg;
}

}  // namespace k8s::api
