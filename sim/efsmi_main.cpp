// SPDX-License-Identifier: Apache-2.0
// enflame-sim-efsmi: prints what efsmi would print on the host described by the
// enflame-sim.json next to its own real path (installed by enflame-sim-host build).

#include <csignal>
#include <chrono>
#include <cstdio>
#include <exception>
#include <filesystem>
#include <set>
#include <string>
#include <thread>

#include "efsmi_print.hpp"
#include "model_json.hpp"
#include "telemetry.hpp"

namespace {

enum class Command { Usage, QueryText, QueryJson, List, Profiles };

Command parse_args(int argc, char** argv) {
    std::set<std::string> flags;
    for (int i = 1; i < argc; ++i) {
        std::string a = argv[i];
        if (a == "--query") a = "-q";
        if (a == "--list") a = "-L";
        flags.insert(a);
    }
    using S = std::set<std::string>;
    if (flags == S{"-q"}) return Command::QueryText;
    if (flags == S{"-q", "--json-format"}) return Command::QueryJson;
    if (flags == S{"-L"}) return Command::List;
    if (flags == S{"--drs", "--list-profile"}) return Command::Profiles;
    return Command::Usage;
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
    if (h.faults.efsmi_flood) {
        const Command c = parse_args(argc, argv);
        if (c == Command::QueryText) return flood(sim::efsmi_query_text(h, dir));
        if (c == Command::QueryJson) return flood(sim::efsmi_query_json(h, dir));
    }
    if (h.faults.efsmi_exit_code != 0) return h.faults.efsmi_exit_code;
    switch (parse_args(argc, argv)) {
        case Command::QueryText:
            return emit(shaped(h, sim::efsmi_query_text(h, dir)), 0);
        case Command::QueryJson:
            if (h.faults.json_unsupported) return emit(sim::efsmi_usage(), 1);
            return emit(shaped(h, sim::efsmi_query_json(h, dir)), 0);
        case Command::List:
            return emit(sim::efsmi_list(h), 0);
        case Command::Profiles:
            return emit(sim::efsmi_profiles(h), 0);
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
