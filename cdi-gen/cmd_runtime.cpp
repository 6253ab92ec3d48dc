// SPDX-License-Identifier: Apache-2.0
// `enflame-ctk runtime configure|unconfigure`: wires enflame-container-runtime into Docker,
// containerd or CRI-O. The edits are inject::runtime_config's pure functions; this file picks
// the files, reads them, and reports what changed.
#include <unistd.h>

#include <filesystem>
#include <iostream>
#include <memory>

#include "context.hpp"
#include "runtime_plan.hpp"
#include "inject/fs.hpp"
#include "inject/runtime_config.hpp"

namespace rc = inject::runtime_config;

namespace ctk {
namespace {

constexpr std::size_t kMaxBytes = 4 << 20;

/// enflame-container-runtime next to this binary (an installed package), else /usr/bin's.
std::string default_runtime_path() {
    std::error_code ec;
    auto self = std::filesystem::read_symlink("/proc/self/exe", ec);
    if (!ec) {
        auto sibling = self.parent_path() / "enflame-container-runtime";
        if (::access(sibling.c_str(), X_OK) == 0) return sibling.string();
    }
    return "/usr/bin/enflame-container-runtime";
}

/// The file's text, "" if it does not exist.
inject::Result<std::string> read_or_empty(const HostRoot& root, const std::string& path) {
    INJECT_TRY(auto t, root.read(path, kMaxBytes));
    return t ? std::move(*t) : std::string();
}

}  // namespace

inject::Result<bool> apply_changes(const HostRoot& root, const std::vector<Change>& changes,
                                   bool dry_run) {
    bool changed = false;
    for (const auto& c : changes) {
        const auto shown = root.show(c.path);
        if (dry_run) {
            if (changes.size() > 1) std::cout << "# " << shown << (c.remove ? " (removed)" : "") << "\n";
            if (!c.remove) std::cout << c.content;
            continue;
        }
        if (auto dir = std::filesystem::path(c.path).parent_path(); !c.remove && !dir.empty()) {
            std::vector<std::string> created;
            INJECT_TRY_VOID(root.make_dirs(dir.string(), created));
        }
        INJECT_TRY(auto outcome, rc::write_file(root.fd(), c.path, c.content, c.remove));
        switch (outcome) {
            case rc::WriteOutcome::Unchanged:
                std::cout << "unchanged: " << shown << " (nothing to do)\n";
                break;
            case rc::WriteOutcome::Written:
                std::cout << "updated: " << shown << "\n";
                break;
            case rc::WriteOutcome::Removed:
                std::cout << "removed: " << shown << "\n";
                break;
        }
        changed = changed || outcome != rc::WriteOutcome::Unchanged;
        if (c.drop_backup) INJECT_TRY_VOID(root.remove(rc::backup_path(c.path)));
    }
    return changed;
}

namespace {

/// Undoing our edit of a whole file: back to the backup's bytes when nothing else changed, and
/// removed when we created it (no backup) and only our own skeleton is left.
inject::Result<Change> undo(const HostRoot& root, const std::string& path, std::string_view now,
                            std::string_view skeleton,
                            const std::function<inject::Result<std::string>(
                                std::string_view, std::optional<std::string_view>)>& strip) {
    auto bak_path = rc::backup_path(path);
    INJECT_TRY(auto bak, root.read(bak_path, kMaxBytes));
    INJECT_TRY(auto out, strip(now, bak ? std::optional<std::string_view>(*bak) : std::nullopt));
    Change c{path, out};
    if (!root.exists(path)) return c;  // nothing to undo: apply() reports "unchanged"
    if (bak)
        c.drop_backup = (out == *bak);
    else
        c.remove = (out == skeleton && now != out);
    return c;
}

}  // namespace

inject::Result<std::vector<Change>> plan(const RuntimeArgs& a, const HostRoot& root) {
    INJECT_TRY(auto engine, rc::parse_engine(a.engine));
    // Absolute: the files are opened in the root, so a relative --config names the file in the
    // current folder only once it is made absolute here.
    std::string config = a.config.empty() ? rc::default_config_path(engine)
                                          : std::filesystem::absolute(a.config).lexically_normal().string();
    std::optional<std::string> drop_in;
    if (engine == rc::Engine::Docker) {
        if (!a.drop_in.empty())
            return inject::fail(
                inject::Errc::InvalidInput,
                "docker has no drop-in files: '--drop-in' is for containerd and crio");
    } else if (!a.no_drop_in) {
        // Absolute: containerd resolves a relative import against its config's folder.
        drop_in = a.drop_in.empty()
                      ? *rc::drop_in_for(engine, config)
                      : std::filesystem::absolute(a.drop_in).lexically_normal().string();
    }
    INJECT_TRY(auto text, read_or_empty(root, config));
    std::vector<Change> changes;
    if (!drop_in) {  // edit the main config in place
        if (!a.uninstall) {
            INJECT_TRY(auto out, rc::configure(engine, text, a.opts, config));
            changes.push_back({config, out});
            return changes;
        }
        INJECT_TRY(auto fresh, rc::configure(engine, "", a.opts, config));
        INJECT_TRY(auto skeleton, rc::unconfigure(engine, fresh, a.opts, config));
        INJECT_TRY(auto c, undo(root, config, text, skeleton, [&](std::string_view now, auto orig) {
                       return rc::unconfigure(engine, now, a.opts, config, orig);
                   }));
        changes.push_back(std::move(c));
        return changes;
    }
    if (engine == rc::Engine::Crio) {
        if (a.uninstall)
            changes.push_back({*drop_in, "", true});
        else {
            INJECT_TRY(auto d, rc::drop_in(engine, "", a.opts, config));
            changes.push_back({*drop_in, d});
        }
        return changes;
    }
    // containerd: our drop-in plus an `imports` entry in the main config.
    constexpr std::string_view kNewMain = "version = 2\n";
    std::string main = text.empty() ? std::string(kNewMain) : text;
    if (a.uninstall) {
        changes.push_back({*drop_in, "", true});
        INJECT_TRY(auto c, undo(root, config, text, kNewMain, [&](std::string_view now, auto) {
                       return rc::remove_import(now, *drop_in, config);
                   }));
        changes.push_back(std::move(c));
        return changes;
    }
    INJECT_TRY(auto d, rc::drop_in(engine, main, a.opts, config));
    INJECT_TRY(auto m, rc::add_import(main, *drop_in, config));
    changes.push_back({*drop_in, d});
    changes.push_back({config, m});
    return changes;
}

namespace {

void run(const RuntimeArgs& a) {
    if (a.opts.cdi_enabled && (a.engine == "crio" || a.engine == "cri-o"))
        std::cerr
            << "note: CRI-O has CDI on by default (1.23 and later); --cdi.enabled adds nothing\n";
    auto root = HostRoot::open("/");
    if (!root) throw Exit{report(root.error())};
    auto changes = plan(a, *root);
    if (!changes) throw Exit{report(changes.error())};
    auto changed = apply_changes(*root, *changes, a.dry_run);
    if (!changed) throw Exit{report(changed.error())};
    if (!*changed) return;
    if (a.engine == "docker" && a.uninstall)
        std::cout << "hint: restart dockerd to drop the runtime (its SIGHUP reload keeps a removed "
                     "default-runtime)\n";
    else if (a.engine == "docker")
        std::cout << "hint: send dockerd SIGHUP (or restart it) to load the change\n";
    else
        std::cout << "hint: restart " << a.engine << " to load the change\n";
}

void add_flags(CLI::App* cmd, RuntimeArgs& a, bool with_uninstall) {
    cmd->add_option("--runtime", a.engine, "the engine: docker, containerd or crio")->required();
    cmd->add_option("--config", a.config,
                    "the engine's main config (default: /etc/docker/daemon.json, "
                    "/etc/containerd/config.toml, /etc/crio/crio.conf)");
    cmd->add_option("--runtime-name", a.opts.runtime_name, "the name given to our runtime")
        ->capture_default_str();
    cmd->add_option("--runtime-path", a.opts.runtime_path, "path of enflame-container-runtime")
        ->capture_default_str();
    cmd->add_flag("--set-as-default", a.opts.set_as_default,
                  "make it the engine's default runtime");
    cmd->add_flag("--cdi.enabled", a.opts.cdi_enabled,
                  "turn on the engine's CDI support (docker features.cdi, containerd enable_cdi)");
    cmd->add_option("--cdi.spec-dirs", a.opts.cdi_spec_dirs, "containerd cdi_spec_dirs")
        ->capture_default_str();
    cmd->add_option("--crio.monitor-path", a.opts.monitor_path, "CRI-O monitor_path (conmon)")
        ->capture_default_str();
    cmd->add_flag("--enable-nri", a.opts.nri_enabled,
                  "turn on the engine's NRI for enflame-nri-plugin (containerd "
                  "[plugins.\"io.containerd.nri.v1.nri\"], crio [crio.nri])");
    cmd->add_option("--nri-socket", a.opts.nri_socket,
                    "the NRI socket written with --enable-nri (containerd socket_path, crio "
                    "nri_listen)")
        ->capture_default_str();
    cmd->add_option(
        "--drop-in", a.drop_in,
        "drop-in file for containerd/crio (default: conf.d/99-enflame.toml beside containerd's "
        "--config, /etc/crio/crio.conf.d/99-enflame.toml)");
    cmd->add_flag("--no-drop-in", a.no_drop_in,
                  "edit the main config in place instead of a drop-in");
    cmd->add_flag("--dry-run", a.dry_run, "print the result on stdout and change nothing");
    if (with_uninstall)
        cmd->add_flag("--uninstall", a.uninstall,
                      "remove what configure added (same as 'unconfigure')");
}

void register_runtime(CLI::App& app, Context& /*ctx*/) {
    auto* runtime = app.add_subcommand(
        "runtime", "configure a container engine to use enflame-container-runtime");
    runtime->require_subcommand(1);
    auto args = std::make_shared<RuntimeArgs>();
    args->opts.runtime_path = default_runtime_path();
    auto* conf = runtime->add_subcommand("configure",
                                         "add the enflame runtime to docker, containerd or crio");
    add_flags(conf, *args, true);
    conf->callback([args] { run(*args); });
    auto* unconf = runtime->add_subcommand("unconfigure", "remove what 'runtime configure' added");
    add_flags(unconf, *args, false);
    unconf->callback([args] {
        args->uninstall = true;
        run(*args);
    });
}

const Registrar reg{40, register_runtime};

}  // namespace
}  // namespace ctk
