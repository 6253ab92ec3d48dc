// SPDX-License-Identifier: Apache-2.0
// `enflame-ctk hook update-ldcache|create-symlinks|chmod`: the createContainer hooks the CDI
// spec names. They run in the container's mount namespace before pivot_root with the OCI state
// on stdin; the cwd is the rootfs (runc) or the bundle (crun), so the rootfs is derived from the
// state's bundle and config.json's root.path, never from the cwd. Every file operation is
// in-root (inject/mount.hpp); ldconfig is the host's, in the sandbox (inject/sandbox.hpp).
#include <unistd.h>

#include <iostream>
#include <memory>

#include "context.hpp"
#include "inject/fs.hpp"
#include "inject/hook.hpp"
#include "inject/mount.hpp"

namespace ctk {
namespace {

inject::Result<std::string> rootfs_from_stdin(const std::string& given) {
    if (!given.empty()) return given;
    INJECT_TRY(std::string text, inject::hook::read_state(0));
    INJECT_TRY(auto state, inject::hook::parse_state(text, false));
    INJECT_TRY(auto bundle, inject::hook::load_bundle(state.bundle));
    return bundle.rootfs;
}

[[noreturn]] void finish(const inject::Result<void>& r) {
    if (!r) throw Exit{report(r.error())};
    throw Exit{0};
}

struct HookArgs {
    std::string rootfs;
    std::vector<std::string> folders;
    std::string ldconfig;
    std::vector<std::string> links;
    std::string mode;
    std::vector<std::string> paths;
};

inject::Result<void> update_ldcache(Context& ctx, const HookArgs& a) {
    INJECT_TRY(std::string rootfs, rootfs_from_stdin(a.rootfs));
    inject::hook::LdcacheOptions lo;
    lo.folders = a.folders;
    if (!a.ldconfig.empty()) {
        lo.ldconfig = a.ldconfig;
    } else {
        INJECT_TRY(auto cfg, ctx.config());
        lo.ldconfig = cfg.cli.ldconfig;
    }
    return inject::hook::update_ldcache(rootfs, lo);
}

inject::Result<void> create_symlinks(const HookArgs& a) {
    INJECT_TRY(std::string rootfs, rootfs_from_stdin(a.rootfs));
    INJECT_TRY(auto root, inject::fs::open_root(rootfs));
    for (const auto& l : a.links) {
        auto sep = l.find("::");
        if (sep == std::string::npos || sep == 0 || sep + 2 >= l.size())
            return inject::fail(inject::Errc::InvalidInput,
                                "--link '" + l + "': want TARGET::LINK");
        const std::string link = l.substr(sep + 2);
        if (link.front() != '/')
            return inject::fail(inject::Errc::InvalidInput,
                                "--link '" + l + "': LINK must be absolute");
        auto r = inject::fs::symlink_in_root(root.get(), l.substr(0, sep), link);
        if (!r) return inject::fail(std::move(r).error().context("creating symlinks in " + rootfs));
    }
    return inject::ok();
}

inject::Result<void> chmod_paths(const HookArgs& a) {
    std::size_t used = 0;
    unsigned long mode = 0;
    try {
        mode = std::stoul(a.mode, &used, 8);
    } catch (const std::exception&) {
        used = 0;
    }
    if (used == 0 || used != a.mode.size() || mode > 07777)
        return inject::fail(inject::Errc::InvalidInput,
                            "--mode '" + a.mode + "': want an octal mode such as 755");
    INJECT_TRY(std::string rootfs, rootfs_from_stdin(a.rootfs));
    INJECT_TRY(auto root, inject::fs::open_root(rootfs));
    for (const auto& p : a.paths) {
        auto r = inject::fs::chmod_in_root(root.get(), p, static_cast<mode_t>(mode));
        if (!r) return inject::fail(std::move(r).error().context("chmod in " + rootfs));
    }
    return inject::ok();
}

void register_hook(CLI::App& app, Context& ctx) {
    auto args = std::make_shared<HookArgs>();
    auto* hook = app.add_subcommand("hook", "OCI hooks named in the CDI spec (OCI state on stdin)");
    hook->require_subcommand(1);
    const char* rootfs_help = "act on this rootfs instead of the one the OCI state on stdin names";

    auto* ld = hook->add_subcommand("update-ldcache",
                                    "index library folders with the host's sandboxed ldconfig");
    ld->add_option("--folder", args->folders, "library folder in the container")->required();
    ld->add_option("--ldconfig-path", args->ldconfig,
                   "ldconfig to run ('@' = host path; default from config)");
    ld->add_option("--rootfs", args->rootfs, rootfs_help);
    ld->callback([args, &ctx] { finish(update_ldcache(ctx, *args)); });

    auto* sl = hook->add_subcommand("create-symlinks", "create symlinks inside the rootfs");
    sl->add_option("--link", args->links, "TARGET::LINK (LINK is a container path)")->required();
    sl->add_option("--rootfs", args->rootfs, rootfs_help);
    sl->callback([args] { finish(create_symlinks(*args)); });

    auto* cm = hook->add_subcommand(
        "chmod", "change the mode of paths inside the rootfs (never through a symlink)");
    cm->add_option("--mode", args->mode, "octal mode")->required();
    cm->add_option("--path", args->paths, "container path")->required();
    cm->add_option("--rootfs", args->rootfs, rootfs_help);
    cm->callback([args] { finish(chmod_paths(*args)); });
}

const Registrar reg{60, register_hook};

}  // namespace
}  // namespace ctk
