// Linked into the toolkit's executables only under the asan preset (see CMakeLists.txt).
//
// LeakSanitizer stops every thread through /proc/<getpid()>/task. A CDI createContainer hook
// runs inside the container's PID namespace while /proc is still the host's, so that folder is
// another process's (or missing) and LSan aborts with "Can't open /proc/N/task" after the hook
// has done its work correctly. There, and only there, leak checking is off; everywhere else
// (the shim, the legacy hook, enflame-ctk on the host) it stays on.
#include <sys/syscall.h>
#include <unistd.h>

extern "C" const char* __lsan_default_options();  // NOLINT(bugprone-reserved-identifier)

// Not instrumented itself: it runs before the sanitizer runtime is initialised.
extern "C" __attribute__((no_sanitize("address", "undefined"))) const char*
__lsan_default_options() {  // NOLINT(bugprone-reserved-identifier)
    // Raw syscalls: this runs while the sanitizer runtime is starting, before its interceptors
    // (readlink is one) can be called.
    char buf[32];
    const long n = ::syscall(SYS_readlink, "/proc/self", buf, sizeof buf);
    // A plain digit loop: library helpers such as std::from_chars are instrumented templates.
    long seen = n > 0 ? 0 : -1;
    for (long i = 0; i < n; ++i) {
        if (buf[i] < '0' || buf[i] > '9') return "detect_leaks=0";
        seen = seen * 10 + (buf[i] - '0');
    }
    return seen == ::syscall(SYS_getpid) ? "" : "detect_leaks=0";
}
