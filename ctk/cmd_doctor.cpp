// SPDX-License-Identifier: Apache-2.0
// `enflame-ctk doctor`: why a container would not get its card on this host. The checks are
// inject::doctor's; this file gathers the options (config, flags, PATH) and prints the lines,
// as text for people or `--format json` for scripts. Exit 0 all ok, 1 warnings, 2 failures.
#include <cstdlib>
#include <iostream>
#include <memory>
#include <nlohmann/json.hpp>

#include "context.hpp"
#include "inject/doctor.hpp"
#include "inject/fs.hpp"

namespace ctk {
namespace {

namespace doc = inject::doctor;

struct DoctorArgs {
    std::string format = "text";
    std::string driver_root, dev_root;
    std::vector<std::string> spec_dirs;
    std::vector<std::string> runtimes;
    std::vector<std::string> runtime_configs;  // ENGINE=PATH
    std::vector<std::string> runtime_sockets;  // ENGINE=PATH
    unsigned timeout_ms = 1000;
};

std::vector<std::string> split_path(const char* path) {
    std::vector<std::string> out;
    std::string p =
        path != nullptr ? path : "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin";
    for (std::size_t start = 0;;) {
        const auto colon = p.find(':', start);
        if (auto dir = p.substr(start, colon - start); !dir.empty()) out.push_back(dir);
        if (colon == std::string::npos) break;
        start = colon + 1;
    }
    return out;
}

// Applies ENGINE=PATH settings to the engines' `field`.
inject::Result<void> set_engine_paths(std::vector<doc::Engine>& engines,
                                      const std::vector<std::string>& settings,
                                      std::string doc::Engine::*field, const std::string& flag) {
    for (const auto& s : settings) {
        const auto eq = s.find('=');
        auto it = std::find_if(engines.begin(), engines.end(), [&](const doc::Engine& e) {
            return eq != std::string::npos && e.name == s.substr(0, eq);
        });
        if (it == engines.end())
            return inject::fail(
                inject::Errc::InvalidInput,
                flag + " '" + s +
                    "': want ENGINE=PATH with ENGINE docker, containerd, crio or podman");
        (*it).*field = s.substr(eq + 1);
    }
    return inject::ok();
}

inject::Result<doc::Options> options(Context& ctx, const DoctorArgs& a) {
    doc::Options o;
    if (auto cfg = ctx.config()) {
        o.cfg = *cfg;
        if (auto t = inject::fs::read_file(ctx.config_path, 1 << 20)) o.config_text = *t;
    } else {
        o.config_error = cfg.error();
    }
    auto override_with = [&](std::string& field, const std::string& value, const char* key,
                             const char* flag) {
        if (value.empty()) return;
        field = value;
        o.flag_overrides.emplace_back(key, flag);
    };
    override_with(o.cfg.cli.driver_root, a.driver_root, "driver-root", "--driver-root");
    override_with(o.cfg.cli.dev_root, a.dev_root, "dev-root", "--dev-root");
    if (!a.spec_dirs.empty()) {
        o.cfg.runtime.spec_dirs = a.spec_dirs;
        o.flag_overrides.emplace_back("spec-dirs", "--spec-dir");
    }
    o.path = split_path(std::getenv("PATH"));
    o.timeout = std::chrono::milliseconds(a.timeout_ms);
    INJECT_TRY_VOID(
        set_engine_paths(o.engines, a.runtime_configs, &doc::Engine::config, "--runtime-config"));
    INJECT_TRY_VOID(
        set_engine_paths(o.engines, a.runtime_sockets, &doc::Engine::socket, "--runtime-socket"));
    if (!a.runtimes.empty()) {
        std::erase_if(o.engines, [&](const doc::Engine& e) {
            return std::find(a.runtimes.begin(), a.runtimes.end(), e.name) == a.runtimes.end();
        });
    }
    return o;
}

void print_text(const std::vector<doc::Check>& checks) {
    std::size_t width = 0;
    for (const auto& c : checks) width = std::max(width, c.name.size());
    std::size_t n[3] = {0, 0, 0};
    for (const auto& c : checks) {
        ++n[static_cast<int>(c.status)];
        std::string status(doc::status_name(c.status));
        status.resize(5, ' ');
        std::string name = c.name;
        name.resize(width + 2, ' ');
        std::cout << status << name << c.seen << "\n";
        if (!c.fix.empty())
            std::cout << std::string(5 + width + 2, ' ') << "fix: " << c.fix << "\n";
    }
    std::cout << n[0] << " ok, " << n[1] << (n[1] == 1 ? " warning, " : " warnings, ") << n[2]
              << (n[2] == 1 ? " failure\n" : " failures\n");
}

void print_json(const std::vector<doc::Check>& checks) {
    nlohmann::ordered_json list = nlohmann::ordered_json::array();
    for (const auto& c : checks)
        list.push_back({{"name", c.name},
                        {"status", doc::status_name(c.status)},
                        {"seen", c.seen},
                        {"fix", c.fix}});
    const nlohmann::ordered_json j = {{"checks", std::move(list)},
                                      {"exit_code", doc::exit_code(checks)}};
    std::cout << j.dump(2) << "\n";
}

int run(Context& ctx, const DoctorArgs& a) {
    auto o = options(ctx, a);
    if (!o) return report(o.error()) + 1;  // a bad flag is not a host failure, but not ok either
    const auto checks = doc::run_all(*o);
    if (a.format == "json")
        print_json(checks);
    else
        print_text(checks);
    std::cout.flush();
    return doc::exit_code(checks);
}

void register_doctor(CLI::App& app, Context& ctx) {
    auto a = std::make_shared<DoctorArgs>();
    auto* cmd =
        app.add_subcommand("doctor",
                           "check why a container would not get its Enflame card; exit 0 ok, "
                           "1 warnings, 2 failures");
    cmd->add_option("--format", a->format, "text or json")
        ->check(CLI::IsMember({"text", "json"}))
        ->capture_default_str();
    cmd->add_option("--driver-root", a->driver_root,
                    "where efsmi, libefml and sys/ are (default: config)");
    cmd->add_option("--dev-root", a->dev_root, "where dev/gcu* are (default: config)");
    cmd->add_option("--spec-dir", a->spec_dirs,
                    "CDI spec dir (repeatable; default: config spec-dirs)");
    cmd->add_option("--runtime", a->runtimes,
                    "check only these engines: docker, containerd, crio, podman (repeatable)")
        ->check(CLI::IsMember({"docker", "containerd", "crio", "podman"}));
    cmd->add_option("--runtime-config", a->runtime_configs,
                    "ENGINE=PATH: the engine's config file (default: its usual path; repeatable)");
    cmd->add_option(
        "--runtime-socket", a->runtime_sockets,
        "ENGINE=PATH: the engine's daemon socket (default: its usual path; repeatable)");
    cmd->add_option("--timeout-ms", a->timeout_ms,
                    "limit for each engine's --version and socket connect")
        ->capture_default_str();
    cmd->callback([&ctx, a] { throw Exit{run(ctx, *a)}; });
}

const Registrar reg{85, register_doctor};

}  // namespace
}  // namespace ctk
