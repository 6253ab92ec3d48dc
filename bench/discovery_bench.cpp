// SPDX-License-Identifier: Apache-2.0
// Discovery benchmark (bench/discovery.sh runs it against a simulated host). Per backend:
//   - in process: inject::discover::discover_with(), without and with the DRS queries;
//   - as a command: `enflame-ctk info --backend X` against `env /bin/true`, alternating in the
//     same loop so both see the same machine load; the difference is what discovery costs.
// Prints medians and the interquartile range; --json FILE writes the same numbers.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <functional>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "inject/discover.hpp"
#include "inject/process.hpp"

namespace {

namespace disc = inject::discover;
using Clock = std::chrono::steady_clock;

struct Stats {
    double median = 0, p25 = 0, p75 = 0;  // milliseconds
};

Stats stats(std::vector<double> v) {
    std::sort(v.begin(), v.end());
    auto at = [&](double q) {
        return v[static_cast<std::size_t>(q * static_cast<double>(v.size() - 1) + 0.5)];
    };
    return {at(0.5), at(0.25), at(0.75)};
}

double time_ms(const std::function<void()>& fn) {
    const auto t0 = Clock::now();
    fn();
    return std::chrono::duration<double, std::milli>(Clock::now() - t0).count();
}

[[noreturn]] void die(const std::string& what) {
    std::fprintf(stderr, "discovery_bench: %s\n", what.c_str());
    std::exit(1);
}

std::string g_config_env;  // "ENFLAME_CTK_CONFIG=<file>" for the spawned enflame-ctk

void spawn(const std::vector<std::string>& argv) {
    inject::process::Command cmd;
    cmd.path = argv[0];
    cmd.argv = argv;
    cmd.env = {"PATH=/usr/bin:/bin", g_config_env};
    cmd.timeout = std::chrono::milliseconds(30000);
    auto r = inject::process::run(cmd);
    if (!r) die(r.error().what());
    if (r->exit_code != 0) die(argv[0] + " exited " + std::to_string(r->exit_code) + ": " + r->err);
}

std::string fmt(const Stats& s) {
    char buf[64];
    std::snprintf(buf, sizeof buf, "%7.3f [%.3f-%.3f]", s.median, s.p25, s.p75);
    return buf;
}

}  // namespace

int main(int argc, char** argv) {
    std::string root, ctk, json_out, config;
    int runs = 50;
    for (int i = 1; i + 1 < argc; i += 2) {
        const std::string k = argv[i];
        if (k == "--root")
            root = argv[i + 1];
        else if (k == "--ctk")
            ctk = argv[i + 1];
        else if (k == "--runs")
            runs = std::atoi(argv[i + 1]);
        else if (k == "--json")
            json_out = argv[i + 1];
        else if (k == "--config")
            config = argv[i + 1];
        else
            die("unknown option " + k);
    }
    if (root.empty() || ctk.empty() || config.empty() || runs < 1)
        die("usage: discovery_bench --root HOST --ctk ENFLAME_CTK --config TOML [--runs N] [--json "
            "FILE]");
    g_config_env = "ENFLAME_CTK_CONFIG=" + config;

    disc::Options opts;
    opts.driver_root = opts.dev_root = root;
    std::size_t cards = 0;
    nlohmann::ordered_json report = nlohmann::ordered_json::array();
    std::printf("discovery, %d runs each, milliseconds: median [p25-p75]\n", runs);
    std::printf("%-11s %-24s %-24s %-24s %-24s %-24s %s\n", "backend", "in-process",
                "in-process+DRS", "info --no-drs", "info", "env /bin/true", "info - true");
    for (auto b : {disc::Backend::EfsmiJson, disc::Backend::EfsmiText, disc::Backend::Efml,
                   disc::Backend::Auto}) {
        const std::string name(disc::backend_name(b));
        std::vector<double> inproc, inproc_drs, cli_nodrs, cli, floor, diff;
        for (int i = 0; i < runs; ++i) {
            disc::Options o = opts;
            o.with_drs = false;
            inproc.push_back(time_ms([&] {
                auto h = disc::discover_with(o, b);
                if (!h) die(name + ": " + h.error().what());
                cards = h->devices.size();
            }));
            o.with_drs = true;
            inproc_drs.push_back(time_ms([&] {
                if (auto h = disc::discover_with(o, b); !h) die(name + ": " + h.error().what());
            }));
        }
        const std::vector<std::string> info{ctk,          "info", "--backend",     name,
                                            "--format",   "json", "--driver-root", root,
                                            "--dev-root", root};
        std::vector<std::string> info_nodrs = info;
        info_nodrs.push_back("--no-drs");
        const std::vector<std::string> env_true{"/usr/bin/env", "/bin/true"};
        for (int i = 0; i < runs; ++i) {  // alternating: floor, command, floor, command...
            const double t = time_ms([&] { spawn(env_true); });
            floor.push_back(t);
            cli_nodrs.push_back(time_ms([&] { spawn(info_nodrs); }));
            const double c = time_ms([&] { spawn(info); });
            cli.push_back(c);
            diff.push_back(c - t);
        }
        const Stats s[] = {stats(inproc), stats(inproc_drs), stats(cli_nodrs),
                           stats(cli),    stats(floor),      stats(diff)};
        std::printf("%-11s %-24s %-24s %-24s %-24s %-24s %s\n", name.c_str(), fmt(s[0]).c_str(),
                    fmt(s[1]).c_str(), fmt(s[2]).c_str(), fmt(s[3]).c_str(), fmt(s[4]).c_str(),
                    fmt(s[5]).c_str());
        auto j = [](const Stats& x) {
            return nlohmann::ordered_json{
                {"median_ms", x.median}, {"p25_ms", x.p25}, {"p75_ms", x.p75}};
        };
        report.push_back({{"backend", name},
                          {"cards", cards},
                          {"runs", runs},
                          {"in_process", j(s[0])},
                          {"in_process_drs", j(s[1])},
                          {"info_no_drs", j(s[2])},
                          {"info", j(s[3])},
                          {"env_true", j(s[4])},
                          {"info_minus_true", j(s[5])}});
    }
    std::printf(
        "(%zu cards; efsmi backends spawn efsmi once, +2 spawns with DRS; libefml spawns none "
        "without DRS)\n",
        cards);
    if (!json_out.empty()) std::ofstream(json_out) << report.dump(2) << "\n";
    return 0;
}
