// SPDX-License-Identifier: Apache-2.0
#include "feature-discovery/daemon.hpp"

#include <poll.h>
#include <sys/signalfd.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <csignal>
#include <cstdio>
#include <iostream>
#include <optional>

#include "feature-discovery/labels.hpp"
#include "inject/config.hpp"
#include "inject/discover.hpp"
#include "inject/fs.hpp"
#include "inject/log.hpp"
#include "k8s/file_watch.hpp"
#include "k8s/sharing.hpp"

namespace feature_discovery {
namespace {

using Clock = std::chrono::steady_clock;
using SysClock = std::chrono::system_clock;

// What a pass needs from the configs.
struct Setup {
    inject::discover::Options discover;
    SharingInfo sharing;
};

inject::Result<Setup> load(const DaemonOptions& o) {
    INJECT_TRY(const auto cfg, inject::config::load_file(o.config_path, !o.config_path_given));
    Setup s;
    s.discover = inject::discover::options_from(cfg);
    s.discover.with_drs = true;
    // The device plugin's ConfigMap is not there under the DRA overlay (the DaemonSet mounts it
    // optional): a label is not worth a crash loop, so without the file the sharing labels are
    // left out. A file that is there and wrong is still an error.
    auto sharing = k8s::load_plugin_config(o.plugin_config, o.resource_name);
    if (!sharing && sharing.error().code() == inject::Errc::NotFound) {
        inject::log::info("no device plugin config ({}): no sharing-strategy label",
                          sharing.error().what());
        s.sharing.strategy.clear();
        return s;
    }
    if (!sharing) return inject::fail(std::move(sharing).error());
    s.sharing.replicas = sharing->replicas;
    s.sharing.strategy = sharing->replicas > 1 ? "time-slicing" : "none";
    return s;
}

// The output's folder must exist: NFD creates features.d, we never create folders.
inject::Result<void> check_output(const std::string& output) {
    if (output == "-") return inject::ok();
    if (output.empty() || output.back() == '/')
        return inject::fail(inject::Errc::InvalidInput,
                            "--output '" + output + "': want a file name or -");
    const auto slash = output.rfind('/');
    const std::string dir =
        slash == std::string::npos ? "." : (slash == 0 ? "/" : output.substr(0, slash));
    struct stat st {};
    if (::stat(dir.c_str(), &st) != 0)
        return inject::fail(inject::sys_error("--output '" + output + "': folder '" + dir + "'"));
    if (!S_ISDIR(st.st_mode))
        return inject::fail(inject::Errc::InvalidInput,
                            "--output '" + output + "': '" + dir + "' is not a folder");
    return inject::ok();
}

inject::Result<void> write_out(const std::string& output, std::string_view text) {
    if (output == "-") {
        if (std::fwrite(text.data(), 1, text.size(), stdout) != text.size() ||
            std::fflush(stdout) != 0)
            return inject::fail(inject::sys_error("writing the labels to stdout"));
        return inject::ok();
    }
    // NFD reads every file in features.d but dot-files: the temp file must be one.
    inject::fs::AtomicWriteOptions w;
    w.mode = 0644;
    w.hidden_temp = true;
    return inject::fs::atomic_write(output, text, w);
}

class Labeler {
public:
    Labeler(DaemonOptions o, Setup s) : o_(std::move(o)), setup_(std::move(s)) {}

    /// One pass: discovery, labels, the file. A failure leaves the last good file alone.
    inject::Result<void> pass();
    /// Logs why a pass failed and what the node keeps (the last labels, or none).
    void failed(const inject::Error& e);
    void reload();
    /// The sharing labels from the plugin config the node's label picks (the state file).
    inject::Result<void> follow_plugin_config(const std::optional<k8s::drs::LayoutState>& st);
    /// Removes the labels file (SIGTERM, or a failure before any good pass).
    void remove_file() const;
    int loop(int sig_fd, k8s::FileWatch* drs_state);

private:
    DaemonOptions o_;
    Setup setup_;
    std::vector<std::string> models_;  ///< last logged mix of models
    std::string last_labels_;          ///< the last good file without its expiry line
    std::optional<SysClock::time_point> last_good_, last_expiry_;
};

inject::Result<void> Labeler::pass() {
    const auto now = SysClock::now();
    auto host = inject::discover::discover(setup_.discover);
    if (!host) return inject::fail(std::move(host).error().context("discovering Enflame cards"));
    if (auto m = models(*host); m != models_) {
        if (m.size() > 1)
            inject::log::warn(
                "cards of several models on this node ({}): model, memory, family and arch label "
                "the "
                "first card ({}), as NVIDIA's GFD does; count counts them all",
                fmt::join(m, ", "), m.front());
        models_ = std::move(m);
    }
    std::string layout;  // in force: the manager says success
    if (!o_.drs_state_file.empty()) {
        auto st = k8s::drs::read_layout_state(o_.drs_state_file);
        if (!st) return inject::fail(std::move(st).error());
        if (*st && (*st)->state == k8s::drs::kSuccess) layout = (*st)->layout;
        INJECT_TRY_VOID(follow_plugin_config(*st));
    }
    const auto labels = make_labels(*host, setup_.sharing, layout);
    std::optional<SysClock::time_point> expiry;
    if (o_.timestamp)
        expiry = std::chrono::time_point_cast<std::chrono::seconds>(now) + 2 * o_.sleep_interval;
    INJECT_TRY(const auto text, render(labels, expiry));
    if (auto w = write_out(o_.output, text); !w)
        return inject::fail(std::move(w).error().context("writing the labels"));
    const auto body = render(labels, std::nullopt);
    if (body && *body != last_labels_) {
        inject::log::info("{} labels written to {} ({} cards, backend {})", labels.size(),
                          o_.output == "-" ? "stdout" : o_.output, host->devices.size(),
                          host->backend);
        last_labels_ = *body;
    } else {
        inject::log::debug("labels refreshed in {}", o_.output);
    }
    last_good_ = now;
    last_expiry_ = expiry;
    return inject::ok();
}

void Labeler::failed(const inject::Error& e) {
    if (o_.output == "-") {
        spdlog::error("labels not updated: {}", e.what());
    } else if (!last_good_) {
        remove_file();
        spdlog::error("labels not updated: {}; no good pass yet, so no labels file", e.what());
    } else if (last_expiry_) {
        spdlog::error("labels not updated: {}; keeping the labels of {} until they expire at {}",
                      e.what(), rfc3339(*last_good_), rfc3339(*last_expiry_));
    } else {
        spdlog::error(
            "labels not updated: {}; keeping the labels of {} (no expiry: --no-timestamp)",
            e.what(), rfc3339(*last_good_));
    }
}

inject::Result<void> Labeler::follow_plugin_config(const std::optional<k8s::drs::LayoutState>& st) {
    INJECT_TRY(const auto path,
               k8s::drs::plugin_config_path(st, o_.plugin_config_dir, o_.plugin_config_default));
    if (path == o_.plugin_config) return inject::ok();
    auto o = o_;
    o.plugin_config = path;
    INJECT_TRY(auto s, load(o));
    o_ = std::move(o);
    setup_ = std::move(s);
    inject::log::info("device plugin config {}: sharing labels from it", path);
    return inject::ok();
}

void Labeler::reload() {
    auto s = load(o_);
    if (!s) {
        spdlog::error("SIGHUP: keeping the running configuration: {}", s.error().what());
        return;
    }
    setup_ = std::move(*s);
    inject::log::info("SIGHUP: configuration re-read");
}

void Labeler::remove_file() const {
    if (o_.output == "-") return;
    if (::unlink(o_.output.c_str()) == 0)
        inject::log::info("removed {}", o_.output);
    else if (errno != ENOENT)
        spdlog::error("{}", inject::sys_error("removing " + o_.output).what());
}

int Labeler::loop(int sig_fd, k8s::FileWatch* drs_state) {
    auto next = Clock::now();
    for (;;) {
        if (Clock::now() >= next) {
            if (auto r = pass(); !r) failed(r.error());
            next = Clock::now() + o_.sleep_interval;
        }
        const auto wait =
            std::chrono::duration_cast<std::chrono::milliseconds>(next - Clock::now()).count();
        pollfd fds[2] = {{sig_fd, POLLIN, 0}, {drs_state ? drs_state->fd() : -1, POLLIN, 0}};
        const int n =
            ::poll(fds, 2, static_cast<int>(std::clamp<long long>(wait + 1, 0, 86400000)));
        if (n < 0 && errno != EINTR) {
            std::cerr << "error: " << inject::sys_error("poll").what() << "\n";
            return 1;
        }
        if (n <= 0) continue;
        if (fds[1].revents & POLLIN) {
            auto changed = drs_state->changed();
            if (!changed) spdlog::error("DRS layouts: {}", changed.error().what());
            if (changed && *changed) next = Clock::now();  // the layout label and counts now
        }
        if (!(fds[0].revents & POLLIN)) continue;
        signalfd_siginfo si{};
        if (::read(sig_fd, &si, sizeof si) != static_cast<ssize_t>(sizeof si)) continue;
        if (si.ssi_signo == SIGHUP) {
            reload();
            next = Clock::now();
            continue;
        }
        inject::log::info("signal {}: stopping", si.ssi_signo);
        remove_file();
        return 0;
    }
}

}  // namespace

int run(const DaemonOptions& opts) {
    DaemonOptions o = opts;
    o.plugin_config_default = o.plugin_config;
    auto fail_with = [](const inject::Error& e) {
        std::cerr << "error: " << e.what() << "\n";
        return 1;
    };
    if (auto r = check_output(o.output); !r) return fail_with(r.error());
    auto setup = load(o);
    if (!setup) return fail_with(setup.error());
    if (o.oneshot) {
        Labeler l(o, std::move(*setup));
        auto r = l.pass();
        return r ? 0 : fail_with(r.error());
    }
    // Signals are taken through a signalfd, so a pass is never interrupted half-way.
    sigset_t set;
    sigemptyset(&set);
    for (int s : {SIGTERM, SIGINT, SIGHUP}) sigaddset(&set, s);
    if (::sigprocmask(SIG_BLOCK, &set, nullptr) != 0)
        return fail_with(inject::sys_error("blocking signals"));
    inject::fs::UniqueFd sig_fd(::signalfd(-1, &set, SFD_CLOEXEC | SFD_NONBLOCK));
    if (!sig_fd.valid()) return fail_with(inject::sys_error("signalfd"));
    inject::log::info("labelling every {} ms into {}", o.sleep_interval.count(), o.output);
    std::optional<k8s::FileWatch> drs_state;
    if (!o.drs_state_file.empty()) {
        auto w = k8s::FileWatch::create(o.drs_state_file);
        if (!w) return fail_with(w.error().context("--drs-state-file"));
        drs_state = std::move(*w);
    }
    Labeler l(o, std::move(*setup));
    return l.loop(sig_fd.get(), drs_state ? &*drs_state : nullptr);
}

}  // namespace feature_discovery
