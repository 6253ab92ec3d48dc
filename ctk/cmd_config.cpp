// SPDX-License-Identifier: Apache-2.0
// `enflame-ctk config`: print the effective configuration, or change keys of a config file
// (`--set key=value`, validated by inject::config::parse; `--in-place FILE` writes it back).
#include <iostream>
#include <memory>

#include "context.hpp"
#include "inject/config.hpp"
#include "inject/fs.hpp"
#include "inject/runtime_config.hpp"

namespace ctk {
namespace {

struct ConfigArgs {
    std::vector<std::string> sets;
    std::string in_place;
};

inject::Result<std::string> edited(const ConfigArgs& a, Context& ctx) {
    const std::string& path = a.in_place.empty() ? ctx.config_path : a.in_place;
    auto text = inject::fs::read_file(path, 1 << 20);
    if (!text && !(text.error().code() == inject::Errc::NotFound && a.in_place.empty() &&
                   !ctx.config_path_given))
        return inject::fail(std::move(text).error().context("reading config"));
    std::string out = text ? *text : std::string();
    for (const auto& kv : a.sets) {
        auto eq = kv.find('=');
        if (eq == std::string::npos || eq == 0)
            return inject::fail(inject::Errc::InvalidInput, "--set '" + kv + "' is not key=value");
        INJECT_TRY(out, inject::runtime_config::set_config_key(out, kv.substr(0, eq),
                                                               kv.substr(eq + 1), path));
    }
    return out;
}

void run(const ConfigArgs& a, Context& ctx) {
    if (a.sets.empty()) {
        if (!a.in_place.empty())
            throw Exit{report(
                inject::Error(inject::Errc::InvalidInput, "--in-place needs --set key=value"))};
        auto cfg = ctx.config();
        if (!cfg) throw Exit{report(cfg.error())};
        std::cout << inject::config::to_toml(*cfg);
        return;
    }
    auto out = edited(a, ctx);
    if (!out) throw Exit{report(out.error())};
    if (a.in_place.empty()) {
        std::cout << *out;
        return;
    }
    if (auto w = inject::fs::atomic_write(a.in_place, *out); !w)
        throw Exit{report(std::move(w).error().context("writing '" + a.in_place + "'"))};
}

void register_config(CLI::App& app, Context& ctx) {
    auto args = std::make_shared<ConfigArgs>();
    auto* cmd = app.add_subcommand("config", "print the effective configuration, or change a key");
    cmd->add_option("--set", args->sets,
                    "key=value to change: 'section.key' or a bare key such as 'mode'; repeatable");
    cmd->add_option("--in-place", args->in_place,
                    "write the changed file back to FILE (default: print it)");
    cmd->callback([args, &ctx] { run(*args, ctx); });
}

const Registrar reg{50, register_config};

}  // namespace
}  // namespace ctk
