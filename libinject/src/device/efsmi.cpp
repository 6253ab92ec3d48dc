// SPDX-License-Identifier: Apache-2.0
// The efsmi backends and the DRS queries: efsmi found under driver-root, run without a shell,
// with a fixed minimal environment (nothing of ours leaks into it, and LC_ALL=C keeps its
// output in the format we parse), a timeout and a bound on its output.
#include "device/backends.hpp"
#include "device/text_util.hpp"
#include "inject/fs.hpp"
#include "inject/log.hpp"
#include "inject/process.hpp"

#include <fcntl.h>
#include <sys/stat.h>

#include <cstring>

#include <spdlog/fmt/ranges.h>

namespace inject::discover::detail {

Result<Efsmi> find_efsmi(const Options& opts) {
    auto not_found = [&opts] {
        return fail(Errc::NotFound, fmt::format("no efsmi under driver-root '{}' (tried {})", opts.driver_root,
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
            return fail(Errc::Io, "efsmi timed out after " + std::to_string(opts.efsmi_timeout.count()) + " ms",
                        ETIMEDOUT);
        return fail(std::move(out).error());
    }
    if (out->term_signal != 0)
        return fail(Errc::Io, "efsmi was killed by signal " + std::to_string(out->term_signal) + " (" +
                                  ::strsignal(out->term_signal) + ")");
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
        INJECT_TRY(std::string out,
                   run_efsmi(opts, efsmi, {"-q", "--json-format"}, "(old driver without --json-format?)"));
        INJECT_TRY(rep.cards, parse_efsmi_json(out));
    } else {
        INJECT_TRY(std::string out, run_efsmi(opts, efsmi, {"-q"}));
        INJECT_TRY(rep.cards, parse_efsmi_text(out));
    }
    if (!rep.cards.empty()) rep.driver_version = rep.cards.front().driver_version;
    return rep;
}

void add_drs(const Options& opts, device::Host& host) {
    if (!opts.with_drs || host.devices.empty()) return;
    auto efsmi = find_efsmi(opts);
    if (!efsmi) {
        log::debug("no DRS information: {}", efsmi.error().what());
        return;
    }
    // Per card, as gcushare asks: one card's failure drops DRS for that card only. A card
    // without profiles cannot have instances, so it costs one efsmi run, not two.
    for (auto& d : host.devices) {
        const std::string card = std::to_string(d.index);
        auto read = [&]() -> Result<std::vector<device::DrsInstance>> {
            INJECT_TRY(std::string profiles_out, run_efsmi(opts, *efsmi, {"-i", card, "--drs", "--list-profile"}));
            INJECT_TRY(auto profiles, parse_efsmi_drs_profiles(profiles_out, d.index));
            if (profiles.empty()) return std::vector<device::DrsInstance>{};
            for (auto& p : profiles)  // cards of one product offer the same profiles: keep each once
                if (std::find(host.drs_profiles.begin(), host.drs_profiles.end(), p) == host.drs_profiles.end())
                    host.drs_profiles.push_back(std::move(p));
            INJECT_TRY(std::string list_out, run_efsmi(opts, *efsmi, {"-i", card, "--drs", "--list-instance"}));
            return parse_efsmi_drs_instances(list_out, d.index);
        };
        auto instances = read();
        if (!instances) {
            log::debug("card {}: no DRS information: {}", d.index, instances.error().what());
            continue;
        }
        d.drs_instances = std::move(*instances);
    }
}

}  // namespace inject::discover::detail
