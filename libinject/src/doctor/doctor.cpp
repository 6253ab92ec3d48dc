// SPDX-License-Identifier: Apache-2.0
// The doctor's frame (status names, the exit code, running every group) and the config check:
// each key's effective value and where it came from (a flag, the file, or the default).
#include "inject/doctor.hpp"

#include <algorithm>
#include <sstream>

#include "inject/text.hpp"

namespace inject::doctor {
namespace {

std::string trim(std::string_view s) {
    return std::string(text::trim(s, " \t\r"));
}

// "section.key" of every key the file sets. The file already parsed (config::parse), so a
// line scan is enough: a table header or `key = value` outside a multi-line value.
std::vector<std::string> keys_in(std::string_view text) {
    std::vector<std::string> out;
    std::string section;
    std::istringstream in{std::string(text)};
    for (std::string line; std::getline(in, line);) {
        const std::string t = trim(line);
        if (t.empty() || t[0] == '#') continue;
        if (t[0] == '[') {
            section = trim(std::string_view(t).substr(1, t.find(']') - 1));
            continue;
        }
        if (const auto eq = t.find('='); eq != std::string::npos) {
            std::string key = trim(std::string_view(t).substr(0, eq));
            if (key.size() >= 2 && key.front() == '"' && key.back() == '"')
                key = key.substr(1, key.size() - 2);
            out.push_back(section + "." + key);
        }
    }
    return out;
}

}  // namespace

std::string_view status_name(Status s) noexcept {
    switch (s) {
        case Status::Ok:
            return "ok";
        case Status::Warn:
            return "warn";
        case Status::Fail:
            return "fail";
    }
    return "fail";
}

std::vector<Check> check_config(const Options& opts) {
    std::vector<Check> out;
    if (opts.config_error) {
        out.push_back({"config.file", Status::Fail,
                       opts.config_error->what() + " (the checks below use the defaults)",
                       "correct the file (man enflame-container-runtime-config.toml); 'enflame-ctk "
                       "config' prints "
                       "the effective values"});
    } else {
        out.push_back({"config.file", Status::Ok,
                       opts.cfg.source == "defaults" ? std::string("no config file: the defaults")
                                                     : opts.cfg.source,
                       ""});
    }
    const auto set = keys_in(opts.config_text);
    std::string section;
    std::istringstream in(config::to_toml(opts.cfg));
    for (std::string line; std::getline(in, line);) {
        if (line.empty()) continue;
        if (line.front() == '[') {
            section = line.substr(1, line.find(']') - 1);
            continue;
        }
        const auto eq = line.find(" = ");
        if (eq == std::string::npos) continue;
        const std::string key = line.substr(0, eq);
        std::string from = "default";
        if (std::find(set.begin(), set.end(), section + "." + key) != set.end())
            from = "set in " + opts.cfg.source;
        for (const auto& [k, flag] : opts.flag_overrides)
            if (k == key) from = "flag " + flag;
        out.push_back({"config." + key, Status::Ok, line.substr(eq + 3) + " (" + from + ")", ""});
    }
    return out;
}

std::vector<Check> run_all(const Options& opts) {
    std::vector<Check> out = check_config(opts);
    auto append = [&out](std::vector<Check> more) {
        out.insert(out.end(), std::make_move_iterator(more.begin()),
                   std::make_move_iterator(more.end()));
    };
    std::optional<device::Host> host;
    append(check_driver(opts, host));
    append(check_devices(opts));
    append(check_cdi(opts, host));
    append(check_runtimes(opts));
    return out;
}

int exit_code(const std::vector<Check>& checks) noexcept {
    int code = 0;
    for (const auto& c : checks) {
        if (c.status == Status::Fail) return 2;
        if (c.status == Status::Warn) code = 1;
    }
    return code;
}

}  // namespace inject::doctor
