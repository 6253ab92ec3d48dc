// SPDX-License-Identifier: Apache-2.0
// cgroup v2 device access: BPF_PROG_TYPE_CGROUP_DEVICE programs through the raw bpf(2) syscall
// (no map, no helper call: a straight list of compares, as runc composes its filter).
//
// Extending what a runtime attached: each program P attached to the container's cgroup is read
// back (its translated instructions) and replaced by "allow exactly these nodes, else run P",
// atomically (BPF_F_REPLACE under BPF_F_ALLOW_MULTI, or a plain re-attach when the runtime
// attached without it). P's own rules keep holding for everything else; nothing beyond the
// listed nodes is widened.
#include <linux/bpf.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <array>
#include <cerrno>
#include <cstring>
#include <limits>

#include "inject/fs.hpp"
#include "inject/hook.hpp"
#include "inject/log.hpp"

namespace inject::hook {
namespace {

// The context of a device program: struct bpf_cgroup_dev_ctx { u32 access_type; u32 major; u32
// minor; } with access_type = (BPF_DEVCG_ACC_* << 16) | BPF_DEVCG_DEV_*.
constexpr std::int16_t kCtxAccessType = 0, kCtxMajor = 4, kCtxMinor = 8;
constexpr std::uint8_t kR0 = 0, kR1 = 1, kType = 2, kAccess = 3, kMajor = 4, kMinor = 5;
constexpr std::uint32_t kMaxPrograms = 64;

bpf_insn insn(std::uint8_t code, std::uint8_t dst, std::uint8_t src, std::int16_t off,
              std::int32_t imm) {
    bpf_insn i{};
    i.code = code;
    i.dst_reg = dst & 0xf;
    i.src_reg = src & 0xf;
    i.off = off;
    i.imm = imm;
    return i;
}

bpf_insn load_ctx(std::uint8_t dst, std::int16_t off) {
    return insn(BPF_LDX | BPF_MEM | BPF_W, dst, kR1, off, 0);
}
bpf_insn ret(std::int32_t v) {
    return insn(BPF_ALU64 | BPF_MOV | BPF_K, kR0, 0, 0, v);
}
bpf_insn exit_insn() {
    return insn(BPF_JMP | BPF_EXIT, 0, 0, 0, 0);
}

std::int32_t access_bits(const std::string& access) {
    std::int32_t bits = 0;
    if (access.find('m') != std::string::npos) bits |= BPF_DEVCG_ACC_MKNOD;
    if (access.find('r') != std::string::npos) bits |= BPF_DEVCG_ACC_READ;
    if (access.find('w') != std::string::npos) bits |= BPF_DEVCG_ACC_WRITE;
    return bits;
}

Result<std::int32_t> imm32(std::optional<std::int64_t> v, const char* what) {
    if (*v < 0 || *v > std::numeric_limits<std::int32_t>::max())
        return fail(Errc::InvalidInput, std::string("device rule: ") + what + " " +
                                            std::to_string(*v) + " is out of range");
    return static_cast<std::int32_t>(*v);
}

// One rule: jumps past itself unless type, major, minor match and the requested access is a
// subset of the rule's; then returns allow ? 1 : 0. r0 is the scratch register, r1 (ctx) is kept.
// False when the rule matches every access (nothing after it can run).
Result<bool> emit_rule(std::vector<bpf_insn>& out, const DeviceRule& r) {
    std::vector<bpf_insn> block;
    std::vector<std::size_t> jumps;  // indexes of the jumps to the end of the block
    if (r.type == 'c' || r.type == 'b') {
        jumps.push_back(block.size());
        block.push_back(insn(BPF_JMP | BPF_JNE | BPF_K, kType, 0, 0,
                             r.type == 'c' ? BPF_DEVCG_DEV_CHAR : BPF_DEVCG_DEV_BLOCK));
    } else if (r.type != 'a') {
        return fail(Errc::InvalidInput,
                    std::string("device rule: type '") + r.type + "' is not a, b or c");
    }
    const std::int32_t bits = access_bits(r.access);
    if (bits != (BPF_DEVCG_ACC_MKNOD | BPF_DEVCG_ACC_READ | BPF_DEVCG_ACC_WRITE)) {
        block.push_back(insn(BPF_ALU | BPF_MOV | BPF_X, kR0, kAccess, 0, 0));
        block.push_back(insn(BPF_ALU | BPF_AND | BPF_K, kR0, 0, 0, ~bits & 7));
        jumps.push_back(block.size());
        block.push_back(insn(BPF_JMP | BPF_JNE | BPF_K, kR0, 0, 0, 0));
    }
    if (r.major) {
        INJECT_TRY(auto m, imm32(r.major, "major"));
        jumps.push_back(block.size());
        block.push_back(insn(BPF_JMP | BPF_JNE | BPF_K, kMajor, 0, 0, m));
    }
    if (r.minor) {
        INJECT_TRY(auto m, imm32(r.minor, "minor"));
        jumps.push_back(block.size());
        block.push_back(insn(BPF_JMP | BPF_JNE | BPF_K, kMinor, 0, 0, m));
    }
    block.push_back(ret(r.allow ? 1 : 0));
    block.push_back(exit_insn());
    for (auto j : jumps) block[j].off = static_cast<std::int16_t>(block.size() - j - 1);
    out.insert(out.end(), block.begin(), block.end());
    return !jumps.empty();
}

long sys_bpf(int cmd, bpf_attr& attr) {
    return ::syscall(SYS_bpf, cmd, &attr, sizeof attr);
}

std::uint64_t ptr(const void* p) {
    return static_cast<std::uint64_t>(reinterpret_cast<std::uintptr_t>(p));
}

Result<fs::UniqueFd> load_program(const std::vector<bpf_insn>& insns) {
    static const char kLicense[] = "Apache-2.0";
    bpf_attr attr{};
    attr.prog_type = BPF_PROG_TYPE_CGROUP_DEVICE;
    attr.insns = ptr(insns.data());
    attr.insn_cnt = static_cast<std::uint32_t>(insns.size());
    attr.license = ptr(kLicense);
    long fd = sys_bpf(BPF_PROG_LOAD, attr);
    if (fd >= 0) return fs::UniqueFd(static_cast<int>(fd));
    const int err = errno;
    // Once more with the verifier's log, for its last line.
    std::array<char, 16384> log{};
    attr.log_buf = ptr(log.data());
    attr.log_size = log.size();
    attr.log_level = 1;
    fd = sys_bpf(BPF_PROG_LOAD, attr);
    if (fd >= 0) ::close(static_cast<int>(fd));
    std::string text(log.data());
    while (!text.empty() && text.back() == '\n') text.pop_back();
    if (auto p = text.rfind("\nprocessed "); p != std::string::npos)
        text.erase(p);  // the statistics line
    if (auto nl = text.rfind('\n'); nl != std::string::npos) text.erase(0, nl + 1);
    return fail(Errc::Io, "loading a cgroup device program: " + std::string(std::strerror(err)) +
                              (text.empty() ? "" : " (verifier: " + text + ")"));
}

struct Attached {
    std::uint32_t flags = 0;
    std::vector<std::uint32_t> ids;
};

Result<Attached> query(int cgroup_fd, std::uint32_t query_flags) {
    std::array<std::uint32_t, kMaxPrograms> ids{};
    bpf_attr attr{};
    attr.query.target_fd = static_cast<std::uint32_t>(cgroup_fd);
    attr.query.attach_type = BPF_CGROUP_DEVICE;
    attr.query.query_flags = query_flags;
    attr.query.prog_ids = ptr(ids.data());
    attr.query.prog_cnt = kMaxPrograms;
    if (sys_bpf(BPF_PROG_QUERY, attr) != 0)
        return fail(sys_error("querying the cgroup's device programs"));
    Attached a;
    a.flags = attr.query.attach_flags;
    a.ids.assign(ids.begin(), ids.begin() + attr.query.prog_cnt);
    return a;
}

Result<fs::UniqueFd> program_fd(std::uint32_t id) {
    bpf_attr attr{};
    attr.prog_id = id;
    const long fd = sys_bpf(BPF_PROG_GET_FD_BY_ID, attr);
    if (fd < 0) return fail(sys_error("opening device program " + std::to_string(id)));
    return fs::UniqueFd(static_cast<int>(fd));
}

Result<std::vector<bpf_insn>> instructions(int prog_fd, std::uint32_t id) {
    bpf_prog_info info{};
    bpf_attr attr{};
    attr.info.bpf_fd = static_cast<std::uint32_t>(prog_fd);
    attr.info.info_len = sizeof info;
    attr.info.info = ptr(&info);
    if (sys_bpf(BPF_OBJ_GET_INFO_BY_FD, attr) != 0)
        return fail(sys_error("reading device program " + std::to_string(id)));
    const std::uint32_t len = info.xlated_prog_len;
    if (len == 0 || len % sizeof(bpf_insn) != 0)
        return fail(Errc::Unsupported, "device program " + std::to_string(id) +
                                           ": the kernel does not show its instructions");
    std::vector<bpf_insn> insns(len / sizeof(bpf_insn));
    info = bpf_prog_info{};
    info.xlated_prog_len = len;
    info.xlated_prog_insns = ptr(insns.data());
    attr = bpf_attr{};
    attr.info.bpf_fd = static_cast<std::uint32_t>(prog_fd);
    attr.info.info_len = sizeof info;
    attr.info.info = ptr(&info);
    if (sys_bpf(BPF_OBJ_GET_INFO_BY_FD, attr) != 0)
        return fail(sys_error("reading device program " + std::to_string(id)));
    if (info.type != BPF_PROG_TYPE_CGROUP_DEVICE)
        return fail(Errc::Unsupported,
                    "program " + std::to_string(id) + " is not a cgroup device program");
    // Translated code with map references or helper calls carries kernel addresses: it cannot
    // be loaded again. Device filters of runc, crun and systemd have neither.
    for (const auto& i : insns)
        if (i.code == (BPF_LD | BPF_IMM | BPF_DW) || i.code == (BPF_JMP | BPF_CALL))
            return fail(Errc::Unsupported, "device program " + std::to_string(id) +
                                               " uses maps or helper calls; cannot extend it");
    return insns;
}

Result<void> attach(int cgroup_fd, int prog_fd, std::uint32_t flags, int replace_fd) {
    bpf_attr attr{};
    attr.target_fd = static_cast<std::uint32_t>(cgroup_fd);
    attr.attach_bpf_fd = static_cast<std::uint32_t>(prog_fd);
    attr.attach_type = BPF_CGROUP_DEVICE;
    attr.attach_flags = flags;
    if (replace_fd >= 0) attr.replace_bpf_fd = static_cast<std::uint32_t>(replace_fd);
    if (sys_bpf(BPF_PROG_ATTACH, attr) != 0)
        return fail(sys_error("attaching a device program to the cgroup"));
    return ok();
}

// The program for `rules`: prologue (type, access, major, minor in r2..r5), one block per rule,
// then deny, or (deny_unmatched false) fall through to whatever follows.
Result<std::vector<bpf_insn>> device_filter(const std::vector<DeviceRule>& rules,
                                            bool deny_unmatched) {
    std::vector<bpf_insn> out{
        load_ctx(kType, kCtxAccessType),   insn(BPF_ALU | BPF_AND | BPF_K, kType, 0, 0, 0xffff),
        load_ctx(kAccess, kCtxAccessType), insn(BPF_ALU | BPF_RSH | BPF_K, kAccess, 0, 0, 16),
        load_ctx(kMajor, kCtxMajor),       load_ctx(kMinor, kCtxMinor),
    };
    // The last matching rule wins (as in devices.allow/deny): test them last to first.
    // A rule that matches everything ends the program (the verifier refuses unreachable code).
    for (auto it = rules.rbegin(); it != rules.rend(); ++it) {
        INJECT_TRY(bool more, emit_rule(out, *it));
        if (!more) return out;
    }
    if (deny_unmatched) {
        out.push_back(ret(0));
        out.push_back(exit_insn());
    }
    return out;
}

}  // namespace

Result<void> attach_device_filter(int cgroup_fd, const std::vector<DeviceRule>& rules) {
    INJECT_TRY(auto insns, device_filter(rules, true));
    INJECT_TRY(fs::UniqueFd prog, load_program(insns));
    return attach(cgroup_fd, prog.get(), BPF_F_ALLOW_MULTI, -1);
}

Result<std::size_t> extend_device_filters(int cgroup_fd, const std::vector<DeviceRule>& allow) {
    INJECT_TRY(Attached here, query(cgroup_fd, 0));
    if (here.ids.empty()) {
        INJECT_TRY(Attached effective, query(cgroup_fd, BPF_F_QUERY_EFFECTIVE));
        if (effective.ids.empty()) return std::size_t{0};  // nothing filters device access here
        return fail(Errc::Unsupported,
                    "the device filter comes from a parent cgroup, not the container's own");
    }
    if (here.flags != BPF_F_ALLOW_MULTI && here.ids.size() != 1)
        return fail(Errc::Unsupported, "unexpected attach flags " + std::to_string(here.flags));
    INJECT_TRY(auto ours, device_filter(allow, false));
    std::size_t replaced = 0;
    for (auto id : here.ids) {
        INJECT_TRY(fs::UniqueFd old, program_fd(id));
        INJECT_TRY(auto old_insns, instructions(old.get(), id));
        // Already extended with the same nodes (the hook ran twice: prestart and createRuntime).
        if (old_insns.size() >= ours.size() &&
            std::memcmp(old_insns.data(), ours.data(), ours.size() * sizeof(bpf_insn)) == 0) {
            log::debug("device program {} already allows the nodes", id);
            continue;
        }
        std::vector<bpf_insn> insns = ours;
        insns.insert(insns.end(), old_insns.begin(), old_insns.end());
        INJECT_TRY(fs::UniqueFd prog, load_program(insns));
        // Under ALLOW_MULTI every program must allow: replace P in place, atomically. Without
        // it (one program, flags 0 or OVERRIDE) attaching with the same flags replaces it.
        if (here.flags == BPF_F_ALLOW_MULTI) {
            INJECT_TRY_VOID(
                attach(cgroup_fd, prog.get(), BPF_F_ALLOW_MULTI | BPF_F_REPLACE, old.get()));
        } else {
            INJECT_TRY_VOID(attach(cgroup_fd, prog.get(), here.flags, -1));
        }
        log::debug("device program {} replaced by one that also allows {} nodes", id, allow.size());
        ++replaced;
    }
    return replaced;
}

}  // namespace inject::hook
