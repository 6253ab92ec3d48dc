// SPDX-License-Identifier: Apache-2.0
// The engine's files for `runtime configure|unconfigure` and the toolkit installer: which files,
// what goes in them (inject::runtime_config's pure edits), and writing them in the host's root.
#include "inject/runtime_plan.hpp"

#include <filesystem>
#include <functional>
#include <optional>
#include <string_view>

namespace inject::toolkit {

namespace rc = inject::runtime_config;

namespace {

constexpr std::size_t kMaxBytes = 4 << 20;

/// The file's text, "" if it does not exist.
inject::Result<std::string> read_or_empty(const HostRoot& root, const std::string& path) {
    INJECT_TRY(auto t, root.read(path, kMaxBytes));
    return t ? std::move(*t) : std::string();
}

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

inject::Result<bool> apply_changes(const HostRoot& root, const std::vector<Change>& changes,
                                   std::vector<std::string>& lines) {
    bool changed = false;
    for (const auto& c : changes) {
        const auto shown = root.show(c.path);
        if (auto dir = std::filesystem::path(c.path).parent_path(); !c.remove && !dir.empty()) {
            std::vector<std::string> created;
            INJECT_TRY_VOID(root.make_dirs(dir.string(), created));
        }
        INJECT_TRY(auto outcome, rc::write_file(root.fd(), c.path, c.content, c.remove));
        switch (outcome) {
            case rc::WriteOutcome::Unchanged:
                lines.push_back("unchanged: " + shown + " (nothing to do)");
                break;
            case rc::WriteOutcome::Written:
                lines.push_back("updated: " + shown);
                break;
            case rc::WriteOutcome::Removed:
                lines.push_back("removed: " + shown);
                break;
        }
        changed = changed || outcome != rc::WriteOutcome::Unchanged;
        if (c.drop_backup) INJECT_TRY_VOID(root.remove(rc::backup_path(c.path)));
    }
    return changed;
}

inject::Result<std::vector<Change>> plan(const RuntimeArgs& a, const HostRoot& root) {
    INJECT_TRY(auto engine, rc::parse_engine(a.engine));
    // Absolute: the files are opened in the root, so a relative --config names the file in the
    // current folder only once it is made absolute here.
    std::string config = a.config.empty()
                             ? rc::default_config_path(engine)
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

}  // namespace inject::toolkit
