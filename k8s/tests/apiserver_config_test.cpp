// SPDX-License-Identifier: Apache-2.0
// Where the API-server client's config comes from: kubeconfig files (CA data or files, tokens,
// token files, client certificates, the errors that name the field) and the in-cluster
// service account, each checked against fake_apiserver.py over real TLS.
#include <gtest/gtest.h>
#include <yaml-cpp/yaml.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>

#include "api_client_util.hpp"
#include "fake_apiserver.hpp"
#include "k8s/apiserver.hpp"

namespace {

using inject::Errc;
using k8s::api::Client;
using k8s_test::FakeApiServer;
using k8s_test::TempDir;

constexpr const char* kSlices = "/apis/resource.k8s.io/v1/resourceslices";

using k8s_test::client;
using k8s_test::slurp;

// --- kubeconfig ---

std::string b64(const std::string& s) {
    return YAML::EncodeBase64(reinterpret_cast<const unsigned char*>(s.data()), s.size());
}

std::string write(const std::string& path, const std::string& text) {
    std::ofstream(path) << text;
    return path;
}

std::string kubeconfig(const std::string& server, const std::string& cluster_extra,
                       const std::string& user) {
    return "apiVersion: v1\nkind: Config\ncurrent-context: dev\ncontexts:\n- name: dev\n  context: "
           "{cluster: c, "
           "user: u}\nclusters:\n- name: c\n  cluster:\n    server: " +
           server + "\n" + cluster_extra + "users:\n- name: u\n  user:\n" + user;
}

TEST(ApiKubeconfig, CaDataAndTokenReachTheServer) {
    FakeApiServer fake;
    ASSERT_TRUE(fake.up());
    const std::string path = write(
        fake.dir() + "/kc.yaml",
        kubeconfig(fake.url(),
                   "    certificate-authority-data: " + b64(slurp(fake.dir() + "/ca.crt")) + "\n",
                   "    token: test-token\n"));
    auto cfg = k8s::api::load_kubeconfig(path);
    ASSERT_TRUE(cfg) << cfg.error().what();
    EXPECT_EQ(cfg->server, fake.url());
    EXPECT_EQ(cfg->ca_data, slurp(fake.dir() + "/ca.crt"));
    auto c = client(*cfg);
    auto v = c->resource_api_version();
    EXPECT_TRUE(v) << v.error().what();
}

TEST(ApiKubeconfig, RelativeFilesAndClientCertificateReachTheServer) {
    FakeApiServer fake;
    ASSERT_TRUE(fake.up());
    const std::string path =
        write(fake.dir() + "/kc.yaml",
              kubeconfig(fake.url(), "    certificate-authority: ca.crt\n",
                         "    client-certificate: client.crt\n    client-key: client.key\n"));
    auto cfg = k8s::api::load_kubeconfig(path);
    ASSERT_TRUE(cfg) << cfg.error().what();
    EXPECT_EQ(cfg->ca_file, fake.dir() + "/ca.crt");
    EXPECT_EQ(cfg->key_file, fake.dir() + "/client.key");
    auto c = client(*cfg);
    auto r = c->list(kSlices);
    EXPECT_TRUE(r) << r.error().what();
}

TEST(ApiKubeconfig, TokenFileIsRead) {
    TempDir d;
    write(d.path() + "/tok", "secret\n");
    auto cfg = k8s::api::load_kubeconfig(
        write(d.path() + "/kc", kubeconfig("https://h:6443", "", "    tokenFile: tok\n")));
    ASSERT_TRUE(cfg) << cfg.error().what();
    EXPECT_EQ(cfg->token, "secret");
    EXPECT_EQ(cfg->token_file, d.path() + "/tok") << "re-read when it rotates";
}

struct BadKubeconfig {
    const char* name;
    std::string text;
    std::string want;  ///< after "kubeconfig '<path>': "
};

class ApiKubeconfigErrors : public testing::TestWithParam<BadKubeconfig> {};

TEST_P(ApiKubeconfigErrors, NameTheField) {
    TempDir d;
    const std::string path = write(d.path() + "/kc", GetParam().text);
    auto cfg = k8s::api::load_kubeconfig(path);
    ASSERT_FALSE(cfg);
    EXPECT_EQ(cfg.error().code(), Errc::InvalidInput);
    EXPECT_EQ(cfg.error().what(), "kubeconfig '" + path + "': " + GetParam().want);
}

INSTANTIATE_TEST_SUITE_P(
    Cases, ApiKubeconfigErrors,
    testing::Values(
        BadKubeconfig{"NotYaml", "clusters: [\n", "line 2: end of sequence flow not found"},
        BadKubeconfig{"NotAMap", "- a\n", "top level: want a map"},
        BadKubeconfig{"NoCurrentContext", "clusters: []\n", "current-context: missing"},
        BadKubeconfig{"UnknownContext", "current-context: x\ncontexts: []\n",
                      "contexts: no entry named 'x'"},
        BadKubeconfig{"NoServer", kubeconfig("", "", "    token: t\n"),
                      "clusters[c].cluster.server: missing"},
        BadKubeconfig{"BadCaData",
                      kubeconfig("https://h", "    certificate-authority-data: '*not base64*'\n",
                                 "    token: t\n"),
                      "clusters[c].cluster.certificate-authority-data: not valid base64"},
        BadKubeconfig{
            "Insecure",
            kubeconfig("https://h", "    insecure-skip-tls-verify: true\n", "    token: t\n"),
            "clusters[c].cluster.insecure-skip-tls-verify: refused: the API server's certificate "
            "is always verified"},
        BadKubeconfig{"NoToken", kubeconfig("https://h", "", "    {}\n"),
                      "users[u].user: no token, tokenFile or client-certificate"},
        BadKubeconfig{"CertWithoutKey",
                      kubeconfig("https://h", "", "    client-certificate: c.crt\n"),
                      "users[u].user.client-key: missing (a client certificate needs both)"},
        BadKubeconfig{"Exec", kubeconfig("https://h", "", "    exec: {command: aws}\n"),
                      "users[u].user.exec: not supported (use a token or a client certificate)"}),
    [](const auto& i) { return std::string(i.param.name); });

// Like kubectl (client-go): a kubeconfig that names no CA verifies the server against the
// system's CA store. It is verified, not skipped: the fake's own CA is not in that store.
TEST(ApiKubeconfig, WithoutACaTheSystemStoreVerifiesTheServer) {
    FakeApiServer fake;
    ASSERT_TRUE(fake.up());
    const std::string path =
        write(fake.dir() + "/kc.yaml", kubeconfig(fake.url(), "", "    token: test-token\n"));
    auto cfg = k8s::api::load_kubeconfig(path);
    ASSERT_TRUE(cfg) << cfg.error().what();
    EXPECT_TRUE(cfg->ca_file.empty());
    EXPECT_TRUE(cfg->ca_data.empty());
    auto c = client(*cfg);
    auto r = c->list(kSlices);
    ASSERT_FALSE(r);
    EXPECT_EQ(r.error().what().rfind(
                  "GET /apis/resource.k8s.io/v1/resourceslices: TLS: the server's certificate "
                  "does not verify against the CA (the system store): SSL certificate problem: ",
                  0),
              0U)
        << r.error().what();
    EXPECT_TRUE(fake.tokens().empty()) << "no request reached the server";
}

TEST(ApiKubeconfig, MissingFileNamesIt) {
    auto cfg = k8s::api::load_kubeconfig("/nonexistent/kc");
    ASSERT_FALSE(cfg);
    EXPECT_EQ(cfg.error().what(),
              "kubeconfig: reading '/nonexistent/kc': No such file or directory");
}

TEST(ApiInCluster, ServiceAccountReachesTheServer) {
    FakeApiServer fake;
    ASSERT_TRUE(fake.up());
    TempDir sa;
    write(sa.path() + "/token", "test-token\n");
    write(sa.path() + "/ca.crt", slurp(fake.dir() + "/ca.crt"));
    ::setenv("KUBERNETES_SERVICE_HOST", "127.0.0.1", 1);
    ::setenv("KUBERNETES_SERVICE_PORT", fake.url().substr(fake.url().rfind(':') + 1).c_str(), 1);
    auto cfg = k8s::api::in_cluster_config(sa.path());
    ::unsetenv("KUBERNETES_SERVICE_HOST");
    ::unsetenv("KUBERNETES_SERVICE_PORT");
    ASSERT_TRUE(cfg) << cfg.error().what();
    auto c = client(*cfg);
    auto r = c->list(kSlices);
    EXPECT_TRUE(r) << r.error().what();
}

TEST(ApiInCluster, MissingPiecesAreNamed) {
    TempDir sa;
    ::unsetenv("KUBERNETES_SERVICE_HOST");
    auto r = k8s::api::in_cluster_config(sa.path());
    ASSERT_FALSE(r);
    EXPECT_EQ(r.error().what(), "in-cluster config: KUBERNETES_SERVICE_HOST is not set");
    ::setenv("KUBERNETES_SERVICE_HOST", "10.0.0.1", 1);
    ::setenv("KUBERNETES_SERVICE_PORT", "443", 1);
    r = k8s::api::in_cluster_config(sa.path());
    ::unsetenv("KUBERNETES_SERVICE_HOST");
    ::unsetenv("KUBERNETES_SERVICE_PORT");
    ASSERT_FALSE(r);
    EXPECT_EQ(r.error().what(), "in-cluster config: service-account token: reading '" + sa.path() +
                                    "/token': No such file or directory");
}

}  // namespace
