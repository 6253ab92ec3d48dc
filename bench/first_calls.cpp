// SPDX-License-Identifier: Apache-2.0
// first_calls SYMS OUT -- ARGV...: runs ARGV (a static PIE, e.g. the shim) under ptrace with a
// one-shot breakpoint on the entry of every function listed in SYMS ("<hex offset> <name>"
// lines, offsets from the load base: `nm` of a static PIE) and appends to OUT the names of the
// functions it calls, in the order of their first call, until it execs another program or
// exits. bench/shim_order.sh turns that into the shim's link order (runtime-shim/shim.order):
// the functions a container start runs, packed together, are a few pages instead of ones
// spread over the whole text (docs/budgets.md, start-up size: page faults and peak RSS).
// Children it forks (efsmi in auto mode) are traced the same way (their calls count too)
// until they exec; each exec ends tracing of that process, the first program's ends the run.
#include <sys/ptrace.h>
#include <sys/user.h>
#include <sys/wait.h>
#include <unistd.h>

#include <climits>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <map>
#include <string>
#include <vector>

namespace {

struct Site {
    std::vector<std::string> names;  // aliases at one address
    std::uint8_t original = 0;
};

[[noreturn]] void die(const std::string& what) {
    std::fprintf(stderr, "first_calls: %s\n", what.c_str());
    std::exit(1);
}

// The load base of `path` in `pid`: the start of its first mapping.
std::uintptr_t load_base(pid_t pid, const std::string& path) {
    std::ifstream maps("/proc/" + std::to_string(pid) + "/maps");
    for (std::string line; std::getline(maps, line);) {
        if (line.size() > path.size() &&
            line.compare(line.size() - path.size(), path.size(), path) == 0)
            return std::strtoull(line.c_str(), nullptr, 16);
    }
    die("no mapping of " + path + " in process " + std::to_string(pid));
}

void set_byte(pid_t pid, std::uintptr_t addr, std::uint8_t b) {
    const std::uintptr_t word_at = addr & ~std::uintptr_t{7};
    errno = 0;
    long word = ::ptrace(PTRACE_PEEKTEXT, pid, word_at, nullptr);
    if (errno != 0) die("reading the text at " + std::to_string(addr));
    auto* bytes = reinterpret_cast<std::uint8_t*>(&word);
    bytes[addr - word_at] = b;
    if (::ptrace(PTRACE_POKETEXT, pid, word_at, word) != 0)
        die("writing the text at " + std::to_string(addr));
}

std::uint8_t get_byte(pid_t pid, std::uintptr_t addr) {
    const std::uintptr_t word_at = addr & ~std::uintptr_t{7};
    errno = 0;
    long word = ::ptrace(PTRACE_PEEKTEXT, pid, word_at, nullptr);
    if (errno != 0) die("reading the text at " + std::to_string(addr));
    return reinterpret_cast<const std::uint8_t*>(&word)[addr - word_at];
}

}  // namespace

int main(int argc, char** argv) {
    if (argc < 5 || std::strcmp(argv[3], "--") != 0) {
        std::fprintf(stderr, "usage: first_calls SYMS OUT -- ARGV...\n");
        return 2;
    }
    std::map<std::uintptr_t, Site> sites;  // by offset
    {
        std::ifstream syms(argv[1]);
        if (!syms) die(std::string("cannot read ") + argv[1]);
        std::string off, name;
        while (syms >> off >> name)
            sites[std::strtoull(off.c_str(), nullptr, 16)].names.push_back(name);
    }
    char real[PATH_MAX];
    if (::realpath(argv[4], real) == nullptr) die(std::string("cannot resolve ") + argv[4]);

    const pid_t pid = ::fork();
    if (pid == 0) {
        ::ptrace(PTRACE_TRACEME, 0, nullptr, nullptr);
        ::execv(argv[4], argv + 4);
        _exit(127);
    }
    int st = 0;
    if (::waitpid(pid, &st, 0) != pid || !WIFSTOPPED(st)) die("the program did not start");
    const std::uintptr_t base = load_base(pid, real);
    for (auto& [off, s] : sites) s.original = get_byte(pid, base + off);
    for (const auto& [off, s] : sites) set_byte(pid, base + off, 0xCC);

    std::vector<std::string> order;
    ::ptrace(PTRACE_SETOPTIONS, pid, nullptr,
             PTRACE_O_TRACEEXEC | PTRACE_O_EXITKILL | PTRACE_O_TRACEFORK | PTRACE_O_TRACEVFORK |
                 PTRACE_O_TRACECLONE);
    pid_t cur = pid;
    int sig = 0;
    for (;;) {
        if (cur > 0 && ::ptrace(PTRACE_CONT, cur, nullptr, sig) != 0 && cur == pid) break;
        sig = 0;
        cur = ::waitpid(-1, &st, __WALL);
        if (cur < 0) break;
        if (WIFEXITED(st) || WIFSIGNALED(st)) {
            if (cur == pid) break;
            cur = -1;  // a child is gone: wait for the next stop
            continue;
        }
        const int event = st >> 16;
        if (event == PTRACE_EVENT_EXEC) {  // the runtime (or efsmi): not ours any more
            if (cur == pid) {
                ::kill(pid, SIGKILL);
                break;
            }
            ::ptrace(PTRACE_DETACH, cur, nullptr, 0);
            cur = -1;
            continue;
        }
        if (event != 0 || WSTOPSIG(st) != SIGTRAP) {
            // A fork/clone event, or a new child's first stop (SIGSTOP): let it run; any other
            // signal is the program's own and goes to it.
            if (event == 0 && WSTOPSIG(st) != SIGSTOP) sig = WSTOPSIG(st);
            continue;
        }
        user_regs_struct regs{};
        ::ptrace(PTRACE_GETREGS, cur, nullptr, &regs);
        const std::uintptr_t at = regs.rip - 1;
        auto it = at >= base ? sites.find(at - base) : sites.end();
        if (it == sites.end()) die("a trap outside the breakpoints, at " + std::to_string(at));
        if (get_byte(cur, at) == 0xCC) {  // not yet restored through a memory a vfork child shares
            for (const auto& n : it->second.names) order.push_back(n);
            set_byte(cur, at, it->second.original);
        }
        regs.rip = at;
        ::ptrace(PTRACE_SETREGS, cur, nullptr, &regs);
    }
    std::ofstream out(argv[2], std::ios::app);
    for (const auto& n : order) out << n << '\n';
    if (!out) die(std::string("cannot write ") + argv[2]);
    std::fprintf(stderr, "first_calls: %zu of %zu functions called\n", order.size(), sites.size());
    return 0;
}
