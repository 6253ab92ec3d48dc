// SPDX-License-Identifier: Apache-2.0
#pragma once

// Runs k8s/tests/fake_apiserver.py for one test: its own state folder (certs, claims, the write
// log, control.json), started with posix_spawn, stopped by its PID when the object goes.

#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "k8s/apiserver.hpp"
#include "temp_dir.hpp"

extern char** environ;

namespace k8s_test {

class FakeApiServer {
public:
    /// `versions`: "v1", "v1beta1" or "v1,v1beta1" (what discovery offers, preferred first);
    /// `extra`: more flags ("--kube-minor", "35", "--no-partitionable").
    explicit FakeApiServer(const std::string& versions = "v1,v1beta1",
                           const std::vector<std::string>& extra = {}) {
        std::vector<std::string> args{"python3",      K8S_TESTS_DIR "/fake_apiserver.py",
                                      "--dir",        dir_.path(),
                                      "--versions",   versions,
                                      "--token",      token_,
                                      "--parent-pid", std::to_string(::getpid())};
        args.insert(args.end(), extra.begin(), extra.end());
        std::vector<char*> argv;
        for (auto& a : args) argv.push_back(a.data());
        argv.push_back(nullptr);
        posix_spawn_file_actions_t fa;
        posix_spawn_file_actions_init(&fa);
        posix_spawn_file_actions_addopen(&fa, 1, "/dev/null", O_WRONLY, 0);
        if (::posix_spawnp(&pid_, "python3", &fa, nullptr, argv.data(), environ) != 0) pid_ = -1;
        posix_spawn_file_actions_destroy(&fa);
        // The port file appears once the server listens (after generating its certificates).
        for (int i = 0; i < 2000 && pid_ > 0 && port_ == 0; ++i) {
            std::ifstream in(dir_.path() + "/port");
            if (!(in >> port_)) port_ = 0;
            if (port_ == 0) std::this_thread::sleep_for(std::chrono::milliseconds(5));
        }
    }
    ~FakeApiServer() {
        if (pid_ > 0) {
            ::kill(pid_, SIGTERM);
            int st = 0;
            ::waitpid(pid_, &st, 0);
        }
    }
    FakeApiServer(const FakeApiServer&) = delete;
    FakeApiServer& operator=(const FakeApiServer&) = delete;

    [[nodiscard]] bool up() const { return port_ != 0; }
    [[nodiscard]] const std::string& dir() const { return dir_.path(); }
    [[nodiscard]] std::string url() const { return "https://127.0.0.1:" + std::to_string(port_); }

    /// A client config that trusts the fake's CA and carries its token.
    [[nodiscard]] k8s::api::Config config() const {
        k8s::api::Config c;
        c.server = url();
        c.ca_file = dir() + "/ca.crt";
        c.token = token_;
        c.timeout = std::chrono::milliseconds(5000);
        c.backoff = std::chrono::milliseconds(10);
        return c;
    }

    /// Replaces control.json (faults: down, slow_ms, fail_500, conflict_409, fail_429/fail_503
    /// with retry_after, tokens).
    void control(const std::string& json) const {
        const std::string tmp = dir() + "/control.json.t";
        std::ofstream(tmp) << json;
        std::filesystem::rename(tmp, dir() + "/control.json");
    }

    /// Writes a ResourceClaim the server will serve at namespaces/<ns>/resourceclaims/<name>.
    void put_claim(const std::string& ns, const std::string& name, const std::string& json) const {
        std::filesystem::create_directories(dir() + "/claims/" + ns);
        std::ofstream(dir() + "/claims/" + ns + "/" + name + ".json") << json;
    }

    /// The recorded writes, one JSON object per line ({"verb","path","body"}).
    [[nodiscard]] std::vector<nlohmann::json> writes() const { return json_lines("writes.jsonl"); }
    /// Every object the store kept, as stored (each generation of each slice), in order.
    [[nodiscard]] std::vector<nlohmann::json> stored() const { return json_lines("stored.jsonl"); }
    /// The dryRun=All creates ({"path","body"}): answered, never stored.
    [[nodiscard]] std::vector<nlohmann::json> dry_runs() const {
        return json_lines("dryruns.jsonl");
    }
    [[nodiscard]] std::vector<nlohmann::json> json_lines(const std::string& file) const {
        std::vector<nlohmann::json> out;
        std::ifstream in(dir() + "/" + file);
        for (std::string line; std::getline(in, line);)
            if (!line.empty()) out.push_back(nlohmann::json::parse(line));
        return out;
    }

    /// The bearer token of each request so far, in order ("-": none).
    [[nodiscard]] std::vector<std::string> tokens() const {
        std::vector<std::string> out;
        std::ifstream in(dir() + "/tokens.log");
        for (std::string line; std::getline(in, line);) out.push_back(line);
        return out;
    }

    [[nodiscard]] std::string read(const std::string& name) const {
        std::ifstream in(dir() + "/" + name);
        std::ostringstream s;
        s << in.rdbuf();
        return s.str();
    }

private:
    TempDir dir_;
    std::string token_ = "test-token";
    pid_t pid_ = -1;
    int port_ = 0;
};

}  // namespace k8s_test
