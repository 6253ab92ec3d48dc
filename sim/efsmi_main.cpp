// SPDX-License-Identifier: Apache-2.0
// enflame-sim-efsmi: prints what efsmi would print on the host described by the
// enflame-sim.json next to its own real path (installed by enflame-sim-host build).

#include <charconv>
#include <chrono>
#include <csignal>
#include <cstdio>
#include <exception>
#include <filesystem>
#include <optional>
#include <set>
#include <string>
#include <thread>

#include "drs.hpp"
#include "efsmi_print.hpp"
#include "model_json.hpp"
#include "telemetry.hpp"

namespace {

enum class Command { Usage, QueryText, QueryJson, Drs };

struct Args {
    Command command = Command::Usage;
    sim::DrsOp op = sim::DrsOp::ListProfiles;
    std::optional<std::uint32_t> card;  ///< -i <card>
    std::string value;                  ///< the profile or instance id
};

// efsmi [-i <card>] -q [--json-format] | --drs --list-profile | --drs --list-instance |
// --drs on|off | --drs --create-instance <profile-id> | --drs --destroy-instance <instance-id>;
// anything else is usage.
Args parse_args(int argc, char** argv) {
    std::set<std::string> flags;
    Args a;
    for (int i = 1; i < argc; ++i) {
        std::string f = argv[i];
        if (f == "--query") f = "-q";
        const bool takes = f == "-i" || f == "--create-instance" || f == "--destroy-instance";
        if (takes && i + 1 >= argc) return {};
        if (f == "-i") {
            const std::string v = argv[++i];
            std::uint32_t n = 0;
            auto [p, ec] = std::from_chars(v.data(), v.data() + v.size(), n);
            if (v.empty() || ec != std::errc{} || p != v.data() + v.size()) return {};
            a.card = n;
            continue;
        }
        if (takes) a.value = argv[++i];
        if (f == "--drs" && i + 1 < argc &&
            (std::string(argv[i + 1]) == "on" || std::string(argv[i + 1]) == "off")) {
            f = std::string("--drs-") + argv[++i];
        }
        if (!flags.insert(f).second) return {};
    }
    using S = std::set<std::string>;
    using Op = sim::DrsOp;
    const std::pair<S, Op> drs[] = {
        {{"--drs", "--list-profile"}, Op::ListProfiles},
        {{"--drs", "--list-instance"}, Op::ListInstances},
        {{"--drs-on"}, Op::On},
        {{"--drs-off"}, Op::Off},
        {{"--drs", "--create-instance"}, Op::Create},
        {{"--drs", "--destroy-instance"}, Op::Destroy},
    };
    for (const auto& [f, op] : drs) {
        if (flags == f) {
            a.command = Command::Drs;
            a.op = op;
            return a;
        }
    }
    if (a.card) return {};
    if (flags == S{"-q"}) a.command = Command::QueryText;
    if (flags == S{"-q", "--json-format"}) a.command = Command::QueryJson;
    return a;
}

std::string own_dir() {
    return std::filesystem::read_symlink("/proc/self/exe").parent_path().string();
}

sim::Host load() {
    return sim::load_host(own_dir() + "/" + std::string(sim::kDescFile), "/proc/self/exe");
}

// The truncated fault: the output stops half way, in the middle of a line.
std::string shaped(const sim::Host& h, std::string out) {
    if (h.faults.efsmi_output == "garbage") return sim::efsmi_garbage(h);
    if (h.faults.efsmi_output == "truncated") out.resize(out.size() / 2);
    return out;
}

int emit(const std::string& s, int code) {
    if (std::fwrite(s.data(), 1, s.size(), stdout) != s.size() || std::fflush(stdout) != 0) {
        return 2;
    }
    return code;
}

// The flood fault: the answer again and again until the reader goes away (EPIPE/SIGPIPE)
// or 1 GiB has been written, so a reader without an output bound never finishes.
int flood(const std::string& s) {
    for (std::size_t sent = 0; sent < (std::size_t{1} << 30); sent += s.size()) {
        if (std::fwrite(s.data(), 1, s.size(), stdout) != s.size()) return 2;
    }
    return std::fflush(stdout) == 0 ? 0 : 2;
}

int run(int argc, char** argv) {
    const std::string dir = own_dir();
    if (sim::driver_gone(dir)) {
        std::fprintf(stderr, "efsmi: error: the Enflame driver is not loaded\n");
        return 3;
    }
    const sim::Host h = load();
    if (h.faults.efsmi_sleep_ms > 0) {
        std::this_thread::sleep_for(std::chrono::milliseconds(h.faults.efsmi_sleep_ms));
    }
    if (h.faults.efsmi_signal != 0) {
        // Die as a crashing efsmi would: the default action of the signal, not an exit code.
        std::signal(h.faults.efsmi_signal, SIG_DFL);
        std::raise(h.faults.efsmi_signal);
        return 2;  // a signal whose default action is to continue (SIGCHLD, ...)
    }
    const Args args = parse_args(argc, argv);
    if (h.faults.efsmi_flood) {
        const Command c = args.command;
        if (c == Command::QueryText) return flood(sim::efsmi_query_text(h, dir));
        if (c == Command::QueryJson) return flood(sim::efsmi_query_json(h, dir));
    }
    if (h.faults.efsmi_exit_code != 0) return h.faults.efsmi_exit_code;
    switch (args.command) {
        case Command::QueryText:
            return emit(shaped(h, sim::efsmi_query_text(h, dir)), 0);
        case Command::QueryJson:
            if (h.faults.json_unsupported) return emit(sim::efsmi_usage(), 1);
            return emit(shaped(h, sim::efsmi_query_json(h, dir)), 0);
        case Command::Drs: {
            if (h.faults.drs_needs_card && !args.card) return emit(sim::efsmi_usage(), 1);
            const sim::Answer a = sim::efsmi_drs(h, dir, args.op, args.card, args.value);
            if (!a.err.empty()) std::fputs(a.err.c_str(), stderr);
            return emit(a.out, a.code);
        }
        case Command::Usage:
            break;
    }
    return emit(sim::efsmi_usage(), 1);
}

}  // namespace

int main(int argc, char** argv) {
    try {
        return run(argc, argv);
    } catch (const std::exception& e) {
        std::fprintf(stderr, "efsmi: error: %s\n", e.what());
        return 2;
    }
}
