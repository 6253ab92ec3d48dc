// SPDX-License-Identifier: Apache-2.0
#include "args.hpp"

#include <algorithm>
#include <array>

namespace shim {
namespace {

// runc 1.1's global flags that take a value; every other global flag is a boolean.
constexpr std::array<std::string_view, 5> kGlobalValueFlags{"root", "log", "log-format", "rootless",
                                                            "criu"};
// create/run flags that take a value.
constexpr std::array<std::string_view, 5> kCreateValueFlags{"bundle", "b", "console-socket",
                                                            "pid-file", "preserve-fds"};

template <std::size_t N>
bool contains(const std::array<std::string_view, N>& a, std::string_view s) {
    return std::find(a.begin(), a.end(), s) != a.end();
}

/// "--name=value" / "-name" -> {name, value?}; nullopt name for a positional argument.
struct Flag {
    std::string_view name;
    std::optional<std::string_view> value;
};
std::optional<Flag> as_flag(std::string_view a) {
    if (a.size() < 2 || a[0] != '-') return std::nullopt;
    a.remove_prefix(a[1] == '-' ? 2 : 1);
    Flag f;
    if (auto eq = a.find('='); eq != std::string_view::npos) {
        f.name = a.substr(0, eq);
        f.value = a.substr(eq + 1);
    } else {
        f.name = a;
    }
    return f;
}

}  // namespace

RuncArgs scan_args(const std::vector<std::string_view>& args) {
    RuncArgs out;
    std::size_t i = 0;
    // Global flags, up to the subcommand.
    for (; i < args.size(); ++i) {
        auto f = as_flag(args[i]);
        if (!f) break;
        if (f->name.empty()) {
            ++i;
            break;
        }  // "--": the subcommand follows
        std::optional<std::string_view> value = f->value;
        if (contains(kGlobalValueFlags, f->name) && !value && i + 1 < args.size())
            value = args[++i];
        if (f->name == "log" && value)
            out.log_path = std::string(*value);
        else if (f->name == "log-format" && value)
            out.log_format = std::string(*value);
        else if (f->name == "debug")
            out.debug = !f->value || *f->value != "false";
        else if (f->name == "version" || f->name == "v")
            out.version = true;
    }
    if (i >= args.size()) return out;
    out.command = std::string(args[i]);
    out.command_index = i;
    if (!out.edits_bundle()) return out;
    for (++i; i < args.size(); ++i) {
        auto f = as_flag(args[i]);
        if (!f) {
            out.container_id = std::string(args[i]);
            break;
        }
        if (f->name.empty()) {  // "--": the id follows
            if (i + 1 < args.size()) out.container_id = std::string(args[i + 1]);
            break;
        }
        std::optional<std::string_view> value = f->value;
        if (contains(kCreateValueFlags, f->name) && !value && i + 1 < args.size())
            value = args[++i];
        if ((f->name == "bundle" || f->name == "b") && value) out.bundle = std::string(*value);
    }
    return out;
}

}  // namespace shim
