// SPDX-License-Identifier: Apache-2.0
// The shim's passthrough fast path (issue 27): the ELF entry point, before the C library starts.
//
// Every runc call the shim does not change (state, start, kill, delete, ...) costs one exec of
// this binary in front of runc. Measured on the 2-core VM, most of that exec is glibc's own
// start-up, not our work: a static glibc program that only returns costs 0.38 ms more than one
// with no libc at all, almost all of it cpuid (init_cpu_features, the cache sizes), which traps
// to the hypervisor at about 10 us each. So the binary's entry point is enflame_fast_start:
// for a call that passes through it scans argv, reads the config with a strict subset of TOML,
// finds the runtime exactly as find_runtime does and execs it with raw system calls. Anything
// it is not sure of (create/run, --version, --debug, a debug log file, a config line outside
// the subset, a runtime it cannot find, a failed exec) returns to glibc's _start, and main()
// does the call as before, errors and all. So the fast path never decides an error: it either
// does exactly what main() would do, or leaves it to main().
//
// Constraints (it runs before the static PIE relocates itself and before TLS exists): no libc
// call (memcpy and friends are IFUNCs, resolved later), no table of pointers (they need
// relocating), no stack protector (its canary lives in TLS); the target compiles this file
// with -fno-stack-protector -fno-jump-tables -fno-builtin and without sanitizers.
#if defined(__x86_64__)

#include <fcntl.h>
#include <linux/limits.h>
#include <sys/stat.h>
#include <sys/syscall.h>

#include <cerrno>

namespace {

long sys3(long n, long a, long b, long c) {
    long r;
    asm volatile("syscall" : "=a"(r) : "a"(n), "D"(a), "S"(b), "d"(c) : "rcx", "r11", "memory");
    return r;
}

long sys4(long n, long a, long b, long c, long d) {
    long r;
    register long r10 asm("r10") = d;
    asm volatile("syscall"
                 : "=a"(r)
                 : "a"(n), "D"(a), "S"(b), "d"(c), "r"(r10)
                 : "rcx", "r11", "memory");
    return r;
}

long open_at(const char* p, long flags, long mode) {
    return sys4(SYS_openat, AT_FDCWD, reinterpret_cast<long>(p), flags, mode);
}
void close_fd(long fd) {
    sys3(SYS_close, fd, 0, 0);
}
bool stat_at(const char* p, struct stat* st) {
    return sys4(SYS_newfstatat, AT_FDCWD, reinterpret_cast<long>(p), reinterpret_cast<long>(st),
                0) == 0;
}

// NUL-terminated string equal to the n bytes at s (never read past lit's end: s may hold a NUL).
bool eq(const char* s, int n, const char* lit) {
    int i = 0;
    for (; i < n; ++i)
        if (lit[i] == '\0' || lit[i] != s[i]) return false;
    return lit[i] == '\0';
}
bool eqz(const char* a, const char* b) {
    while (*a != '\0' && *a == *b) ++a, ++b;
    return *a == *b;
}
int len(const char* s) {
    int n = 0;
    while (s[n] != '\0') ++n;
    return n;
}

const char* getenv_in(char** envp, const char* name) {
    const int n = len(name);
    for (; *envp != nullptr; ++envp) {
        const char* e = *envp;
        int i = 0;
        while (i < n && e[i] == name[i]) ++i;
        if (i == n && e[n] == '=') return e + n + 1;
    }
    return nullptr;
}

// ---- the config: a strict subset of TOML ----------------------------------------------------
// Accepted: blank lines, comments, the two tables, `key = value` lines with a known key of the
// current table and a value of the key's type (a one-line basic string of printable ASCII with
// no escapes, a one-line array of such strings, true/false, a positive decimal integer), each
// key and table once, every value check main()'s parser makes. Anything else: not sure.
enum Type { Str, Arr, Bool, Int };
constexpr int kMaxRuntimes = 8;

struct Parsed {
    const char* runtime[kMaxRuntimes];
    int runtime_len[kMaxRuntimes];
    int runtimes = -1;  // -1: the key is absent (the defaults)
};

struct Cursor {
    char* p;
    char* end;
    bool at_eol() const {
        return p == end || *p == '\n' || (*p == '\r' && p + 1 < end && p[1] == '\n');
    }
    void ws() {
        while (p < end && (*p == ' ' || *p == '\t')) ++p;
    }
    // Optional comment, then the end of the line (consumed).
    bool eol() {
        ws();
        if (p < end && *p == '#')
            for (++p; p < end && *p != '\n' && *p != '\r'; ++p)
                if (*p != '\t' && (*p < 0x20 || *p > 0x7e)) return false;
        if (!at_eol()) return false;
        if (p < end) p += *p == '\r' ? 2 : 1;
        return true;
    }
    bool string(const char** s, int* n) {
        if (p == end || *p != '"') return false;
        char* b = ++p;
        for (; p < end && *p != '"'; ++p)
            if (*p < 0x20 || *p > 0x7e || *p == '\\') return false;
        if (p == end) return false;
        *s = b;
        *n = static_cast<int>(p - b);
        ++p;
        return true;
    }
};

// Key id: table 1 = [enflame-container-runtime], 2 = [enflame-container-cli]; -1 unknown.
int key_id(int table, const char* k, int n, Type* type) {
    if (table == 1) {
        if (eq(k, n, "mode")) return *type = Str, 0;
        if (eq(k, n, "runtimes")) return *type = Arr, 1;
        if (eq(k, n, "spec-dirs")) return *type = Arr, 2;
        if (eq(k, n, "log-file")) return *type = Str, 3;
        if (eq(k, n, "log-level")) return *type = Str, 4;
        if (eq(k, n, "accept-envvar-when-unprivileged")) return *type = Bool, 5;
        if (eq(k, n, "cdi-kind")) return *type = Str, 6;
        if (eq(k, n, "hook-path")) return *type = Str, 7;
    } else if (table == 2) {
        if (eq(k, n, "driver-root")) return *type = Str, 16;
        if (eq(k, n, "dev-root")) return *type = Str, 17;
        if (eq(k, n, "host-driver-root")) return *type = Str, 18;
        if (eq(k, n, "host-dev-root")) return *type = Str, 19;
        if (eq(k, n, "ldconfig")) return *type = Str, 20;
        if (eq(k, n, "device-prefix")) return *type = Str, 21;
        if (eq(k, n, "library-search-paths")) return *type = Arr, 22;
        if (eq(k, n, "compute-libraries")) return *type = Arr, 23;
        if (eq(k, n, "efsmi-timeout-ms")) return *type = Int, 24;
    }
    return -1;
}

// The value checks main()'s parser makes on a string key.
bool string_ok(int id, const char* s, int n) {
    switch (id) {
        case 0:
            return eq(s, n, "auto") || eq(s, n, "cdi") || eq(s, n, "legacy");
        case 3:
            return n == 0;  // a debug log: main() writes to it, the fast path does not
        case 4:
            return eq(s, n, "trace") || eq(s, n, "debug") || eq(s, n, "info") || eq(s, n, "warn") ||
                   eq(s, n, "error") || eq(s, n, "off");
        case 18:
        case 19:
            return n == 0 || s[0] == '/';
        case 21:
            if (n == 0) return false;
            for (int i = 0; i < n; ++i)
                if (s[i] == '/') return false;
            return true;
        default:
            return true;
    }
}

bool parse_config(char* buf, long size, Parsed* out) {
    // a NUL byte is main()'s error to report (TOML allows none)
    for (long i = 0; i < size; ++i)
        if (buf[i] == '\0') return false;
    Cursor c{buf, buf + size};
    int table = 0;
    unsigned tables = 0;
    unsigned seen = 0;
    while (c.p < c.end) {
        c.ws();
        if (c.at_eol() || *c.p == '#') {
            if (!c.eol()) return false;
            continue;
        }
        if (*c.p == '[') {
            char* name = ++c.p;
            while (c.p < c.end && *c.p != ']' && *c.p != '\n') ++c.p;
            if (c.p == c.end || *c.p != ']') return false;
            const int n = static_cast<int>(c.p - name);
            ++c.p;
            table = eq(name, n, "enflame-container-runtime") ? 1
                    : eq(name, n, "enflame-container-cli")   ? 2
                                                             : 0;
            if (table == 0 || (tables & (1U << table)) != 0) return false;
            tables |= 1U << table;
            if (!c.eol()) return false;
            continue;
        }
        char* key = c.p;
        while (c.p < c.end && ((*c.p >= 'a' && *c.p <= 'z') || (*c.p >= 'A' && *c.p <= 'Z') ||
                               (*c.p >= '0' && *c.p <= '9') || *c.p == '-' || *c.p == '_'))
            ++c.p;
        Type type = Str;
        const int id = key_id(table, key, static_cast<int>(c.p - key), &type);
        if (id < 0 || (seen & (1U << id)) != 0) return false;
        seen |= 1U << id;
        c.ws();
        if (c.p == c.end || *c.p != '=') return false;
        ++c.p;
        c.ws();
        if (type == Str) {
            const char* s = nullptr;
            int n = 0;
            if (!c.string(&s, &n) || !string_ok(id, s, n)) return false;
        } else if (type == Arr) {
            if (c.p == c.end || *c.p != '[') return false;
            ++c.p;
            c.ws();
            int count = 0;
            if (c.p < c.end && *c.p == ']') {
                ++c.p;
            } else {
                for (;;) {
                    const char* s = nullptr;
                    int n = 0;
                    if (!c.string(&s, &n)) return false;
                    if (id == 1) {
                        if (count == kMaxRuntimes) return false;
                        out->runtime[count] = s;
                        out->runtime_len[count] = n;
                    }
                    ++count;
                    c.ws();
                    if (c.p < c.end && *c.p == ']') {
                        ++c.p;
                        break;
                    }
                    if (c.p == c.end || *c.p != ',') return false;
                    ++c.p;
                    c.ws();
                }
            }
            if (id == 1) out->runtimes = count;
        } else if (type == Bool) {
            const long rest = c.end - c.p;
            if (rest >= 4 && eq(c.p, 4, "true"))
                c.p += 4;
            else if (rest >= 5 && eq(c.p, 5, "false"))
                c.p += 5;
            else
                return false;
        } else {
            if (c.p == c.end || *c.p < '1' || *c.p > '9') return false;
            int digits = 0;
            while (c.p < c.end && *c.p >= '0' && *c.p <= '9') ++c.p, ++digits;
            if (digits > 18) return false;
        }
        if (!c.eol()) return false;
    }
    return true;
}

// ---- find_runtime (exec.cpp), the same rules ------------------------------------------------
bool executable(const char* p, const struct stat* self) {
    struct stat st;
    if (!stat_at(p, &st) || !S_ISREG(st.st_mode)) return false;
    if (self != nullptr && st.st_dev == self->st_dev && st.st_ino == self->st_ino) return false;
    return sys4(SYS_faccessat, AT_FDCWD, reinterpret_cast<long>(p), X_OK, 0) == 0;
}

// The first runtime found, copied NUL-terminated into out (PATH_MAX bytes); false: none or not
// sure.
bool find_runtime(const Parsed& cfg, const char* path_env, char* out) {
    struct stat self_st;
    const struct stat* self = stat_at("/proc/self/exe", &self_st) ? &self_st : nullptr;
    if (path_env == nullptr || *path_env == '\0')
        path_env = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin";
    const int count = cfg.runtimes < 0 ? 2 : cfg.runtimes;
    for (int r = 0; r < count; ++r) {
        const char* rt = cfg.runtimes < 0 ? (r == 0 ? "runc" : "crun") : cfg.runtime[r];
        const int n = cfg.runtimes < 0 ? 4 : cfg.runtime_len[r];
        if (n == 0) continue;
        bool slash = false;
        for (int i = 0; i < n; ++i) slash = slash || rt[i] == '/';
        if (slash) {
            if (rt[0] != '/') continue;
            if (n >= PATH_MAX) return false;
            for (int i = 0; i < n; ++i) out[i] = rt[i];
            out[n] = '\0';
            if (executable(out, self)) return true;
            continue;
        }
        for (const char* d = path_env;;) {
            const char* colon = d;
            while (*colon != '\0' && *colon != ':') ++colon;
            const int dn = static_cast<int>(colon - d);
            if (dn > 0 && d[0] == '/') {
                if (dn + 1 + n >= PATH_MAX) return false;
                int k = 0;
                for (int i = 0; i < dn; ++i) out[k++] = d[i];
                out[k++] = '/';
                for (int i = 0; i < n; ++i) out[k++] = rt[i];
                out[k] = '\0';
                if (executable(out, self)) return true;
            }
            if (*colon == '\0') break;
            d = colon + 1;
        }
    }
    return false;
}

bool value_flag(const char* name, int n) {
    return eq(name, n, "root") || eq(name, n, "log") || eq(name, n, "log-format") ||
           eq(name, n, "rootless") || eq(name, n, "criu");
}

}  // namespace

// Returns only when main() has to do the call (see the top of the file).
extern "C" __attribute__((visibility("hidden"), used)) void enflame_fast_path(long* sp) {
    const int argc = static_cast<int>(sp[0]);
    char** argv = reinterpret_cast<char**>(sp + 1);
    char** envp = argv + argc + 1;
    // runc's global flags up to the subcommand, as scan_args reads them.
    const char* log_path = nullptr;
    int i = 1;
    for (; i < argc; ++i) {
        const char* a = argv[i];
        if (a[0] != '-' || a[1] == '\0') break;
        const char* name = a + (a[1] == '-' ? 2 : 1);
        int n = 0;
        while (name[n] != '\0' && name[n] != '=') ++n;
        const char* value = name[n] == '=' ? name + n + 1 : nullptr;
        if (n == 0) {
            ++i;
            break;
        }
        if (value == nullptr && value_flag(name, n) && i + 1 < argc) value = argv[++i];
        if (eq(name, n, "log") && value != nullptr)
            log_path = value;
        else if (eq(name, n, "debug") || eq(name, n, "version") || eq(name, n, "v"))
            return;
    }
    if (i >= argc || eqz(argv[i], "create") || eqz(argv[i], "run")) return;

    const char* cfg_path = getenv_in(envp, "ENFLAME_CTK_CONFIG");
    const bool given = cfg_path != nullptr && *cfg_path != '\0';
    if (!given) cfg_path = "/etc/enflame-container-runtime/config.toml";
    char buf[16384];
    long size = 0;
    Parsed cfg;
    const long fd = open_at(cfg_path, O_RDONLY | O_CLOEXEC, 0);
    if (fd >= 0) {
        for (;;) {
            const long r = sys3(SYS_read, fd, reinterpret_cast<long>(buf + size),
                                static_cast<long>(sizeof buf) - size);
            if (r == -EINTR) continue;
            if (r < 0 || (r > 0 && size + r == static_cast<long>(sizeof buf))) {
                close_fd(fd);
                return;
            }
            if (r == 0) break;
            size += r;
        }
        close_fd(fd);
        if (!parse_config(buf, size, &cfg)) return;
    } else if (given || fd != -ENOENT) {
        return;
    }

    char runtime[PATH_MAX];
    if (!find_runtime(cfg, getenv_in(envp, "PATH"), runtime)) return;
    if (log_path != nullptr) {  // main() opens runc's log (O_CREAT) before anything else
        const long lfd = open_at(log_path, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0644);
        if (lfd >= 0) close_fd(lfd);
    }
    char* const argv0 = argv[0];
    argv[0] = runtime;
    sys3(SYS_execve, reinterpret_cast<long>(runtime), reinterpret_cast<long>(argv),
         reinterpret_cast<long>(envp));
    argv[0] = argv0;  // main() execs it again and reports the error
}

// The entry point: the kernel's initial stack in %rsp, the dynamic loader's fini function in
// %rdx (0 for a static binary); both go to glibc's _start unchanged when the fast path returns.
asm(R"(
    .section .text.enflame_fast_start,"ax",@progbits
    .globl enflame_fast_start
    .hidden enflame_fast_start
    .type enflame_fast_start,@function
enflame_fast_start:
    endbr64
    mov %rdx, %r12
    mov %rsp, %rbx
    mov %rsp, %rdi
    and $-16, %rsp
    call enflame_fast_path
    mov %rbx, %rsp
    mov %r12, %rdx
    xor %ebp, %ebp
    jmp _start
    .size enflame_fast_start, .-enflame_fast_start
    .text
)");

#endif
