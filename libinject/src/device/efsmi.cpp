// SPDX-License-Identifier: Apache-2.0
// The efsmi backends and the DRS queries: efsmi found under driver-root, run without a shell,
// with a fixed minimal environment (nothing of ours leaks into it, and LC_ALL=C keeps its
// output in the format we parse), a timeout and a bound on its output.
#include <fcntl.h>
#include <spdlog/fmt/ranges.h>
#include <sys/stat.h>

#include <cstring>

#include "device/backends.hpp"
#include "device/text_util.hpp"
#include "inject/fs.hpp"
#include "inject/log.hpp"
#include "inject/process.hpp"

namespace inject::discover::detail {

Result<Efsmi> find_efsmi(const Options& opts) {
    auto not_found = [&opts] {
        return fail(Errc::NotFound,
                    fmt::format("no efsmi under driver-root '{}' (tried {})", opts.driver_root,
                                fmt::join(opts.efsmi_paths, ", ")));
    };
    auto root = fs::open_root(opts.driver_root);
    if (!root) {
        // No driver-root at all: nothing under it either.
        if (root.error().code() == Errc::NotFound) return not_found();
        return fail(std::move(root).error().context("looking for efsmi"));
    }
    for (const auto& p : opts.efsmi_paths) {
        auto fd = fs::open_in_root(root->get(), p, O_PATH);
        if (fd) {
            struct stat st {};
            if (::fstat(fd->get(), &st) == 0 && S_ISREG(st.st_mode)) {
                INJECT_TRY(std::string path, fs::fd_path(fd->get()));
                return Efsmi{std::move(*fd), std::move(path)};
            }
            log::debug("efsmi: skipping {}: not a regular file", p);
        } else if (fd.error().code() != Errc::NotFound) {
            log::debug("efsmi: skipping {}: {}", p, fd.error().what());
        }
    }
    return not_found();
}

Result<std::string> run_efsmi(const Options& opts, const Efsmi& efsmi,
                              const std::vector<std::string>& args, std::string_view exit_hint) {
    process::Command cmd;
    cmd.path = efsmi.path;
    cmd.exec_fd = efsmi.fd.get();
    cmd.argv.push_back(efsmi.path);
    cmd.argv.insert(cmd.argv.end(), args.begin(), args.end());
    cmd.env = {"PATH=/usr/bin:/bin", "LC_ALL=C"};
    cmd.timeout = opts.efsmi_timeout;
    cmd.max_output = 4 << 20;  // 64 cards of `efsmi -q` are about 130 KiB
    log::debug("running {} {}", efsmi.path, fmt::join(args, " "));
    auto out = process::run(cmd);
    if (!out) {
        if (out.error().sys_errno() == ETIMEDOUT)
            return fail(
                Errc::Io,
                "efsmi timed out after " + std::to_string(opts.efsmi_timeout.count()) + " ms",
                ETIMEDOUT);
        return fail(std::move(out).error());
    }
    if (out->term_signal != 0)
        return fail(Errc::Io, "efsmi was killed by signal " + std::to_string(out->term_signal) +
                                  " (" + ::strsignal(out->term_signal) + ")");
    if (out->exit_code != 0) {
        std::string why = "efsmi exited " + std::to_string(out->exit_code);
        if (!exit_hint.empty()) {
            why += " ";
            why += exit_hint;
        } else if (const std::string_view err = trim(out->err); !err.empty()) {
            why += ": " + quote(trim(err.substr(0, err.find('\n'))));
        }
        return fail(Errc::Io, why);
    }
    return std::move(out->out);
}

Result<Report> query_efsmi(const Options& opts, bool json) {
    INJECT_TRY(Efsmi efsmi, find_efsmi(opts));
    Report rep;
    if (json) {
        INJECT_TRY(std::string out, run_efsmi(opts, efsmi, {"-q", "--json-format"},
                                              "(old driver without --json-format?)"));
        INJECT_TRY(rep.cards, parse_efsmi_json(out));
    } else {
        INJECT_TRY(std::string out, run_efsmi(opts, efsmi, {"-q"}));
        INJECT_TRY(rep.cards, parse_efsmi_text(out));
    }
    if (!rep.cards.empty()) rep.driver_version = rep.cards.front().driver_version;
    return rep;
}

bool efsmi_unusable(const Error& e) {
    return e.code() == Errc::NotFound || e.sys_errno() == ETIMEDOUT ||
           e.message().starts_with("efsmi was killed");
}

namespace {

// The DRS instances of card `card` (`-i <card>`), or of every card; the profiles found are
// added to `profiles` once each (cards of one product offer the same). No profile, no
// instance query: a card without DRS costs one efsmi run, not two.
Result<std::vector<device::DrsInstance>> read_drs(const Options& opts, const Efsmi& efsmi,
                                                  std::optional<std::uint32_t> card,
                                                  std::vector<device::DrsProfile>& profiles) {
    std::vector<std::string> args;
    if (card) args = {"-i", std::to_string(*card)};
    args.insert(args.end(), {"--drs", "--list-profile"});
    INJECT_TRY(std::string out, run_efsmi(opts, efsmi, args));
    INJECT_TRY(auto found, parse_efsmi_drs_profiles(out, card));
    if (found.empty()) return std::vector<device::DrsInstance>{};
    for (auto& p : found)
        if (std::find(profiles.begin(), profiles.end(), p) == profiles.end())
            profiles.push_back(std::move(p));
    args.back() = "--list-instance";
    INJECT_TRY(std::string list, run_efsmi(opts, efsmi, args));
    return parse_efsmi_drs_instances(list, card);
}

}  // namespace

void add_drs(const Options& opts, device::Host& host) {
    if (!opts.with_drs || host.devices.empty()) return;
    auto efsmi = find_efsmi(opts);
    if (!efsmi) {
        log::debug("no DRS information: {}", efsmi.error().what());
        return;
    }
    // Every card at once first: two efsmi runs whatever the number of cards (card by card,
    // 64 cards cost 128 runs, several times cdi generate's budget in docs/budgets.md).
    // When that answer is an error or holds a bad row, card by card with -i as gcushare asks,
    // so that a bad card loses its own DRS only; an efsmi that hangs or crashes is not asked again.
    std::vector<device::DrsProfile> profiles;
    auto all = read_drs(opts, *efsmi, std::nullopt, profiles);
    if (all) {
        host.drs_profiles = std::move(profiles);
        for (auto& inst : *all) {
            auto it =
                std::find_if(host.devices.begin(), host.devices.end(),
                             [&](const device::Device& d) { return d.index == inst.parent_index; });
            if (it == host.devices.end()) {
                log::debug("DRS instance {} on unknown card {}: ignored", device::drs_name(inst),
                           inst.parent_index);
                continue;
            }
            it->drs_instances.push_back(std::move(inst));
        }
        return;
    }
    if (efsmi_unusable(all.error())) {
        log::debug("no DRS information: {}", all.error().what());
        return;
    }
    log::debug("DRS of every card at once: {}; asking card by card", all.error().what());
    for (auto& d : host.devices) {
        auto instances = read_drs(opts, *efsmi, d.index, host.drs_profiles);
        if (!instances) {
            log::debug("card {}: no DRS information: {}", d.index, instances.error().what());
            continue;
        }
        d.drs_instances = std::move(*instances);
    }
}

}  // namespace inject::discover::detail
