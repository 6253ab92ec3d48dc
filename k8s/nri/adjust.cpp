// SPDX-License-Identifier: Apache-2.0
#include "nri/adjust.hpp"

#include <dirent.h>
#include <sys/stat.h>

#include <algorithm>
#include <map>

#include "inject/oci.hpp"

namespace nri_plugin {
namespace {

using inject::Errc;
using inject::fail;

api::Hook* add_hook(api::Hooks& hooks, const std::string& stage) {
    if (stage == "prestart") return hooks.add_prestart();
    if (stage == "createRuntime") return hooks.add_create_runtime();
    if (stage == "createContainer") return hooks.add_create_container();
    if (stage == "startContainer") return hooks.add_start_container();
    if (stage == "poststart") return hooks.add_poststart();
    if (stage == "poststop") return hooks.add_poststop();
    return nullptr;
}

/// Index of the entry of `key` in `seen`, appending a new one when absent.
template <typename T, typename Add>
T* entry_for(std::map<std::string, T*>& seen, const std::string& key, Add add) {
    auto [it, fresh] = seen.emplace(key, nullptr);
    if (fresh)
        it->second = add();
    else
        it->second->Clear();
    return it->second;
}

void stamp_of(const std::string& path, std::string& out) {
    struct stat st {};
    if (::stat(path.c_str(), &st) != 0) {
        out += path + ":-;";
        return;
    }
    out += path + ":" + std::to_string(st.st_ino) + ":" + std::to_string(st.st_size) + ":" +
           std::to_string(st.st_mtim.tv_sec) + "." + std::to_string(st.st_mtim.tv_nsec) + ";";
}

/// What identifies the spec dirs' content: every dir and every file in it (the registry reads
/// the *.yaml, *.yml and *.json ones; the others are cheap to include).
std::string dirs_stamp(const std::vector<std::string>& dirs) {
    std::string out;
    for (const auto& d : dirs) {
        stamp_of(d, out);
        DIR* dir = ::opendir(d.c_str());
        if (dir == nullptr) continue;
        std::vector<std::string> names;
        while (const dirent* e = ::readdir(dir))
            if (e->d_name[0] != '.') names.emplace_back(e->d_name);
        ::closedir(dir);
        std::sort(names.begin(), names.end());
        for (const auto& n : names) stamp_of(d + "/" + n, out);
    }
    return out;
}

}  // namespace

inject::Result<const inject::cdi::Registry*> SpecCache::get(const inject::config::Config& cfg) {
    std::string stamp = dirs_stamp(cfg.runtime.spec_dirs);
    if (!reg_ || stamp != stamp_) {
        reg_.reset();
        INJECT_TRY(auto reg, inject::request::load_registry(cfg));
        reg_ = std::move(reg);
        stamp_ = std::move(stamp);
    }
    return &*reg_;
}

inject::Result<api::ContainerAdjustment> to_adjustment(const inject::cdi::ContainerEdits& edits) {
    if (!edits.additional_gids.empty())
        return fail(Errc::Unsupported, "the edits add supplementary groups, which NRI cannot set");
    api::ContainerAdjustment a;
    std::map<std::string, api::KeyValue*> env;
    for (const auto& kv : edits.env) {
        const auto eq = kv.find('=');
        const std::string key = kv.substr(0, eq);
        auto* e = entry_for(env, key, [&] { return a.add_env(); });
        e->set_key(key);
        e->set_value(eq == std::string::npos ? std::string() : kv.substr(eq + 1));
    }
    std::map<std::string, api::LinuxDevice*> devices;
    for (const auto& d : edits.device_nodes) {
        if (!d.major || !d.minor)
            return fail(Errc::Internal, "device node " + d.path + " has no major/minor number");
        auto* o = entry_for(devices, d.path, [&] { return a.mutable_linux()->add_devices(); });
        o->set_path(d.path);
        o->set_type(d.type.empty() ? "c" : d.type);
        o->set_major(*d.major);
        o->set_minor(*d.minor);
        if (d.file_mode) o->mutable_file_mode()->set_value(*d.file_mode);
        if (d.uid) o->mutable_uid()->set_value(*d.uid);
        if (d.gid) o->mutable_gid()->set_value(*d.gid);
    }
    std::map<std::string, api::Mount*> mounts;
    for (const auto& m : edits.mounts) {
        auto* o = entry_for(mounts, m.container_path, [&] { return a.add_mounts(); });
        o->set_destination(m.container_path);
        o->set_type(m.type.empty() ? "bind" : m.type);
        o->set_source(m.host_path);
        for (const auto& opt : m.options) o->add_options(opt);
    }
    for (const auto& h : edits.hooks) {
        api::Hook* o = add_hook(*a.mutable_hooks(), h.hook_name);
        if (o == nullptr)
            return fail(Errc::Unsupported,
                        "hook " + h.path + ": unknown stage '" + h.hook_name + "'");
        o->set_path(h.path);
        for (const auto& s : h.args) o->add_args(s);
        for (const auto& s : h.env) o->add_env(s);
        if (h.timeout) o->mutable_timeout()->set_value(*h.timeout);
    }
    return a;
}

inject::Result<Decision> decide(const inject::config::Config& cfg, const api::Container& c,
                                const inject::request::EditsOptions& opts, SpecCache& specs) {
    const std::vector<std::string> env(c.env().begin(), c.env().end());
    const std::map<std::string, std::string> annotations(c.annotations().begin(),
                                                         c.annotations().end());
    INJECT_TRY(auto req, inject::request::request_of(cfg, env, annotations, /*privileged=*/false));
    Decision out;
    if (req.empty()) {
        out.summary = "no request";
        return out;
    }
    out.asked = true;
    inject::cdi::ContainerEdits edits;
    INJECT_TRY(const auto* reg, specs.get(cfg));
    if (cfg.runtime.mode == inject::config::Mode::Cdi) {
        INJECT_TRY(edits, inject::request::edits_from_registry(*reg, cfg, req));
    } else {
        // Legacy mode's prestart hook is the shim's way; with NRI the runtime applies the
        // edits itself, so legacy is served as auto.
        INJECT_TRY(auto r, inject::request::auto_edits(cfg, req, opts, *reg));
        edits = std::move(r.edits);
    }
    INJECT_TRY_VOID(inject::oci::fill_device_numbers(edits));
    INJECT_TRY(out.adjust, to_adjustment(edits));
    out.summary = req.source + ": " + std::to_string(edits.device_nodes.size()) +
                  " device nodes, " + std::to_string(edits.mounts.size()) + " mounts, " +
                  std::to_string(edits.hooks.size()) + " hooks";
    return out;
}

}  // namespace nri_plugin
