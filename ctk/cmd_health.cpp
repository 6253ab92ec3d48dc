// SPDX-License-Identifier: Apache-2.0
// `enflame-ctk health CHECK`: Node Problem Detector's custom plugin (deployments/npd/). One
// check per call, one line on stdout (under 80 bytes: NPD keeps that much as the condition's
// message) and NPD's exit code: 0 ok, 1 problem, 2 unknown. The checks are inject::health's;
// this file gathers the options and keeps a hung libefml from hanging the call: the check
// runs on a thread, and when it overruns --timeout-ms the process says so and leaves with 2
// (NPD would kill it at its own timeout and report only "Timeout when running plugin").
#include <link.h>

#include <condition_variable>
#include <cstdlib>
#include <iostream>
#include <memory>
#include <mutex>
#include <optional>
#include <thread>

#include "context.hpp"
#include "inject/fs.hpp"
#include "inject/health.hpp"

namespace ctk {
namespace {

namespace health = inject::health;

struct HealthArgs {
    std::string check;
    std::string install_dir;
    std::string driver_root, dev_root;
    std::vector<std::string> spec_dirs;
    std::string state_dir = "/var/lib/enflame/health";
    std::vector<std::string> driver_versions;
    double max_temperature = 85;
    bool no_link_speed = false;
    unsigned ecc_hold_s = 3600;
    unsigned timeout_ms = 3000;
};

inject::Result<health::Options> options(Context& ctx, const HealthArgs& a) {
    INJECT_TRY(auto cfg, ctx.config());
    health::Options o;
    o.cfg = std::move(cfg);
    if (!a.driver_root.empty()) o.cfg.cli.driver_root = a.driver_root;
    if (!a.dev_root.empty()) o.cfg.cli.dev_root = a.dev_root;
    if (!a.spec_dirs.empty()) o.cfg.runtime.spec_dirs = a.spec_dirs;
    o.state_dir = a.state_dir;
    o.driver_versions = a.driver_versions;
    o.max_temperature_c = a.max_temperature;
    o.link_speed = !a.no_link_speed;
    o.ecc_hold = std::chrono::seconds(a.ecc_hold_s);
    return o;
}

// NPD reads the first line of stdout; the exit code is the verdict.
int say(health::Code code, const std::string& line) {
    std::cout << health::fit_line(line) << "\n" << std::flush;
    return static_cast<int>(code);
}

// --install DIR: this binary as DIR/enflame-ctk, every shared library it runs with in DIR/lib,
// and its ELF interpreter as DIR/ld.so. NPD's image (upstream's, not ours) lacks our
// libraries, so NPD runs `DIR/ld.so --library-path DIR/lib DIR/enflame-ctk health CHECK`: the
// copy needs nothing from the image it lands in. Run by the DaemonSet's init container from
// our image (which has no shell or cp) into an emptyDir both containers mount.
int install(const std::string& dir) {
    std::vector<std::string> libs;
    ::dl_iterate_phdr(
        [](dl_phdr_info* info, std::size_t, void* data) {
            const std::string name = info->dlpi_name != nullptr ? info->dlpi_name : "";
            if (name.starts_with("/"))
                static_cast<std::vector<std::string>*>(data)->push_back(name);
            return 0;
        },
        &libs);
    std::error_code ec;
    std::filesystem::create_directories(dir + "/lib", ec);
    if (ec)
        return report(
            inject::Error(inject::Errc::Io, "creating '" + dir + "/lib': " + ec.message()));
    auto copy = [](const std::string& from, const std::string& to) -> inject::Result<void> {
        INJECT_TRY(auto bytes, inject::fs::read_file(from, 512u << 20));
        return inject::fs::atomic_write(to, bytes, {.mode = 0755});
    };
    std::string interp;
    for (const auto& l : libs) {
        if (l.find("/ld-linux") != std::string::npos || l.find("/ld64") != std::string::npos)
            interp = l;
        auto r = copy(l, dir + "/lib/" + std::filesystem::path(l).filename().string());
        if (!r) return report(r.error());
    }
    if (interp.empty())
        return report(
            inject::Error(inject::Errc::NotFound, "no ELF interpreter among the loaded objects"));
    for (const auto& [from, to] :
         {std::pair{std::string("/proc/self/exe"), dir + "/enflame-ctk"}, {interp, dir + "/ld.so"}})
        if (auto r = copy(from, to); !r) return report(r.error());
    std::cout << "installed " << dir << "/enflame-ctk with " << libs.size()
              << " libraries; run it as " << dir << "/ld.so --library-path " << dir << "/lib "
              << dir << "/enflame-ctk health CHECK\n";
    return 0;
}

int run(Context& ctx, const HealthArgs& a) {
    if (!a.install_dir.empty()) return install(a.install_dir);
    if (a.check.empty())
        return say(health::Code::Unknown, "no check named: want one of the checks in --help");
    auto o = options(ctx, a);
    if (!o) return say(health::Code::Unknown, o.error().what());
    struct Shared {
        std::mutex mu;
        std::condition_variable cv;
        std::optional<inject::Result<health::Verdict>> result;
    };
    auto sh = std::make_shared<Shared>();
    std::thread worker([sh, opts = std::move(*o), check = a.check] {
        auto r = health::run(check, opts);
        const std::lock_guard lock(sh->mu);
        sh->result.emplace(std::move(r));
        sh->cv.notify_one();
    });
    std::unique_lock lock(sh->mu);
    if (!sh->cv.wait_for(lock, std::chrono::milliseconds(a.timeout_ms),
                         [&] { return sh->result.has_value(); })) {
        // The worker is stuck inside libefml: leave without unwinding (no join, no dlclose).
        say(health::Code::Unknown, "check '" + a.check + "' timed out after " +
                                       std::to_string(a.timeout_ms) + " ms (libefml hung?)");
        std::_Exit(static_cast<int>(health::Code::Unknown));
    }
    lock.unlock();
    worker.join();
    if (!*sh->result) return say(health::Code::Unknown, sh->result->error().what());
    const auto& v = **sh->result;
    return say(v.code, v.line);
}

void register_health(CLI::App& app, Context& ctx) {
    auto a = std::make_shared<HealthArgs>();
    std::string names;
    for (const auto& n : health::check_names())
        names += (names.empty() ? "" : ", ") + std::string(n);
    auto* cmd =
        app.add_subcommand("health",
                           "one GCU health check for Node Problem Detector: one line on stdout; "
                           "exit 0 ok, 1 problem, 2 unknown");
    cmd->add_option("check", a->check, "the check: " + names);
    cmd->add_option("--install", a->install_dir,
                    "copy this binary, its libraries and its ELF interpreter into DIR (for NPD's "
                    "image) and exit");
    cmd->add_option("--driver-root", a->driver_root,
                    "where sys/, efsmi and libefml are (default: config)");
    cmd->add_option("--dev-root", a->dev_root, "where dev/gcu* are (default: config)");
    cmd->add_option("--spec-dir", a->spec_dirs,
                    "cdi: CDI spec dir (repeatable; default: config spec-dirs)");
    cmd->add_option("--state-dir", a->state_dir, "devices, ecc: where the last values are kept")
        ->capture_default_str();
    cmd->add_option("--driver-version", a->driver_versions,
                    "driver: a known good driver version (repeatable; default: any)");
    cmd->add_option("--max-temperature", a->max_temperature, "temperature: the limit in Celsius")
        ->capture_default_str();
    cmd->add_flag("--no-link-speed", a->no_link_speed,
                  "pcie: compare the link width only, not the speed");
    cmd->add_option("--ecc-hold", a->ecc_hold_s, "ecc: seconds a rise stays a problem")
        ->capture_default_str();
    cmd->add_option("--timeout-ms", a->timeout_ms, "give up (exit 2) when the check takes longer")
        ->capture_default_str();
    cmd->callback([&ctx, a] { throw Exit{run(ctx, *a)}; });
}

const Registrar reg{87, register_health};

}  // namespace
}  // namespace ctk
