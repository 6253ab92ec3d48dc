// SPDX-License-Identifier: Apache-2.0
// Writing a Config back as TOML (`enflame-ctk config`, the runtime-config defaults). Apart
// from config.cpp so that the shim, which only reads its config, does not link toml++'s
// formatter (and, through it, libm): docs/budgets.md, start-up size.
#include <toml++/toml.h>

#include <sstream>

#include "inject/config.hpp"

namespace inject::config {

std::string toml_string(const std::string& s) {
    static constexpr char kHex[] = "0123456789ABCDEF";
    std::string out = "\"";
    for (const char ch : s) {
        const auto c = static_cast<unsigned char>(ch);
        if (c == '"' || c == '\\') {
            out += '\\';
            out += ch;
        } else if (c == '\n') {
            out += "\\n";
        } else if (c == '\t') {
            out += "\\t";
        } else if (c < 0x20 || c == 0x7f) {
            out += "\\u00";
            out += kHex[c >> 4];
            out += kHex[c & 0xf];
        } else {
            out += ch;
        }
    }
    return out + "\"";
}

namespace {

std::string quote(const std::string& s) {
    std::ostringstream o;
    o << toml::value<std::string>(s);
    return o.str();
}

std::string quote_list(const std::vector<std::string>& v) {
    std::string out = "[";
    for (std::size_t i = 0; i < v.size(); ++i) out += (i ? ", " : "") + quote(v[i]);
    return out + "]";
}

}  // namespace

std::string to_toml(const Config& cfg) {
    const auto& rt = cfg.runtime;
    const auto& cli = cfg.cli;
    std::string o;
    o += "[enflame-container-runtime]\n";
    o += "mode = " + quote(std::string(mode_name(rt.mode))) + "\n";
    o += "runtimes = " + quote_list(rt.runtimes) + "\n";
    o += "spec-dirs = " + quote_list(rt.spec_dirs) + "\n";
    o += "log-file = " + quote(rt.log_file) + "\n";
    o += "log-level = " + quote(rt.log_level) + "\n";
    o += std::string("accept-envvar-when-unprivileged = ") +
         (rt.accept_envvar_when_unprivileged ? "true" : "false") + "\n";
    o += "cdi-kind = " + quote(rt.cdi_kind) + "\n";
    o += "hook-path = " + quote(rt.hook_path) + "\n";
    o += "\n[enflame-container-cli]\n";
    o += "driver-root = " + quote(cli.driver_root) + "\n";
    o += "dev-root = " + quote(cli.dev_root) + "\n";
    o += "host-driver-root = " + quote(cli.host_driver_root) + "\n";
    o += "host-dev-root = " + quote(cli.host_dev_root) + "\n";
    o += "ldconfig = " + quote(cli.ldconfig) + "\n";
    o += "device-prefix = " + quote(cli.device_prefix) + "\n";
    o += "library-search-paths = " + quote_list(cli.library_search_paths) + "\n";
    o += "compute-libraries = " + quote_list(cli.compute_libraries) + "\n";
    o += "efsmi-timeout-ms = " + std::to_string(cli.efsmi_timeout_ms) + "\n";
    return o;
}

}  // namespace inject::config
