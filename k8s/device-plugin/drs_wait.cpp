// SPDX-License-Identifier: Apache-2.0
#include "device-plugin/drs_wait.hpp"

#include <poll.h>
#include <sys/signalfd.h>
#include <unistd.h>

#include <cerrno>
#include <csignal>

#include "inject/log.hpp"
#include "k8s/drs_layout_state.hpp"
#include "k8s/duration.hpp"

namespace device_plugin {
namespace {

using Clock = std::chrono::steady_clock;
using std::chrono::milliseconds;
using State = inject::Result<std::optional<k8s::drs::LayoutState>>;

bool must_wait(const State& st, const std::string& boot_id) {
    return !st || k8s::drs::waits_for_layout(*st, boot_id);
}

// What the state file says, for the log: "DRS layout 'all-1g.11gb' from another boot".
std::string describe(const State& st, const std::string& boot_id) {
    if (!st) return st.error().what();
    if (!*st) return "no DRS layout state";
    const auto& s = **st;
    const bool earlier = !s.boot_id.empty() && s.boot_id != boot_id;
    return "DRS layout '" + s.layout + "' " +
           (earlier ? "from another boot" : s.state.empty() ? "without a state" : s.state);
}

// True when a stop signal was read.
bool stop_signal(int sig_fd) {
    signalfd_siginfo si{};
    if (::read(sig_fd, &si, sizeof si) != static_cast<ssize_t>(sizeof si)) return false;
    if (si.ssi_signo == SIGHUP) return false;  // the config is read after the wait anyway
    inject::log::info("signal {}: stopping", si.ssi_signo);
    return true;
}

}  // namespace

inject::Result<LayoutWait> wait_for_layout(k8s::FileWatch& watch, const std::string& path,
                                           const std::string& boot_id_path, milliseconds limit,
                                           int sig_fd) {
    if (limit.count() == 0) return LayoutWait::NotNeeded;
    const auto t0 = Clock::now();
    State st = k8s::drs::read_layout_state(path);
    if (st && !*st) return LayoutWait::NotNeeded;  // no manager on this node
    INJECT_TRY(const auto boot_id, k8s::drs::read_boot_id(boot_id_path));
    if (!must_wait(st, boot_id)) return LayoutWait::NotNeeded;
    inject::log::info(
        "{} ({}): waiting up to {} for enflame-drs-manager to put it in force in this boot "
        "before registering with kubelet",
        describe(st, boot_id), path, k8s::format_duration(limit));
    for (;;) {
        const auto left = std::chrono::ceil<milliseconds>(limit - (Clock::now() - t0));
        if (left.count() <= 0) {
            inject::log::warn(
                "{} after {}: registering the cards and instances there are now; hint: is "
                "enflame-drs-manager running on this node? (--drs-wait sets the limit)",
                describe(st, boot_id), k8s::format_duration(limit));
            return LayoutWait::TimedOut;
        }
        pollfd fds[2] = {{sig_fd, POLLIN, 0}, {watch.fd(), POLLIN, 0}};
        const int n = ::poll(fds, 2, static_cast<int>(left.count() + 1));
        if (n < 0 && errno != EINTR) return inject::fail(inject::sys_error("poll"));
        if (n <= 0) continue;
        if ((fds[0].revents & POLLIN) && stop_signal(sig_fd)) return LayoutWait::Stopped;
        if (!(fds[1].revents & POLLIN)) continue;
        INJECT_TRY(const bool changed, watch.changed());
        if (!changed) continue;
        st = k8s::drs::read_layout_state(path);
        if (must_wait(st, boot_id)) continue;
        inject::log::info(
            "{} in this boot after {} ms: registering with kubelet", describe(st, boot_id),
            std::chrono::duration_cast<milliseconds>(Clock::now() - t0).count());
        return LayoutWait::Ready;
    }
}

}  // namespace device_plugin
