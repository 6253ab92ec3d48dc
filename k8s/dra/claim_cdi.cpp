// SPDX-License-Identifier: Apache-2.0
#include "dra/claim_cdi.hpp"

#include <dirent.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <functional>
#include <map>
#include <set>

#include "inject/cdi_io.hpp"
#include "inject/cdi_validate.hpp"
#include "inject/fs.hpp"

namespace dra {

using inject::Errc;
using inject::fail;

namespace {

const std::string kFilePrefix = std::string(kCdiVendor) + "-" + std::string(kCdiClass) + "_";
constexpr std::string_view kFileSuffix = ".yaml";

std::string join(const std::string& dir, const std::string& name) {
    return dir + (dir.ends_with('/') ? "" : "/") + name;
}

// The name `generate` gives a device under NameStrategy::Index (`instance`: the DRS instance
// the device is, if any).
std::string generated_name(const inject::device::Device& card,
                           std::optional<std::uint32_t> instance) {
    if (!instance) return std::to_string(card.index);
    for (const auto& in : card.drs_instances) {
        if (in.instance_id == *instance)
            return std::to_string(card.index) + ":" + in.profile + ":" +
                   std::to_string(in.instance_id);
    }
    return {};
}

}  // namespace

std::string spec_file_name(const std::string& claim_uid) {
    return kFilePrefix + claim_uid + std::string(kFileSuffix);
}

std::string claim_uid_of(const std::string& file_name) {
    if (!file_name.starts_with(kFilePrefix) || !file_name.ends_with(kFileSuffix) ||
        file_name.size() <= kFilePrefix.size() + kFileSuffix.size())
        return {};
    return file_name.substr(kFilePrefix.size(),
                            file_name.size() - kFilePrefix.size() - kFileSuffix.size());
}

std::string cdi_device_id(const std::string& claim_uid, const DeviceName& device) {
    return std::string(kCdiVendor) + "/" + std::string(kCdiClass) + "=" + claim_uid + "-" +
           device.str();
}

inject::Result<inject::cdi::Spec> claim_spec(const inject::device::Host& host,
                                             const inject::cdi::GenerateOptions& base,
                                             const std::string& claim_uid,
                                             const std::vector<DeviceName>& devices,
                                             const std::map<std::string, CreatedInstance>& made) {
    // Only the cards (and DRS instances) of the claim go to the generator, so the spec-level
    // edits are what those cards need and nothing names another card.
    inject::device::Host sub = host;
    sub.devices.clear();
    std::map<std::string, std::string> renames;  // generated name -> <uid>-<device>
    for (const auto& d : devices) {
        const auto card =
            std::find_if(host.devices.begin(), host.devices.end(),
                         [&](const inject::device::Device& c) { return c.index == d.index; });
        if (card == host.devices.end())
            return fail(Errc::NotFound, "device '" + d.str() + "' is not on this node");
        std::optional<std::uint32_t> instance = d.drs_instance;
        if (d.placement) {
            const auto m = made.find(d.str());
            if (m == made.end())
                return fail(Errc::NotFound,
                            "device '" + d.str() + "': no DRS instance was made for it");
            const CreatedInstance& want = m->second;
            instance = want.id;
            // The id alone is not the instance: one destroyed behind our back leaves its id to
            // the next create, of any profile.
            for (const auto& in : card->drs_instances) {
                if (in.instance_id != want.id) continue;
                if (in.profile != want.profile ||
                    (!want.uuid.empty() && !in.uuid.empty() && in.uuid != want.uuid))
                    return fail(Errc::NotFound,
                                "device '" + d.str() + "': card " + std::to_string(d.index) +
                                    " instance " + std::to_string(want.id) + " is now " +
                                    in.profile + (in.uuid.empty() ? "" : " " + in.uuid) +
                                    ", not the " + want.profile + " instance made for it");
            }
        }
        const std::string gen = generated_name(*card, instance);
        if (gen.empty())
            return fail(Errc::NotFound, "device '" + d.str() + "': card " +
                                            std::to_string(d.index) + " has no DRS instance " +
                                            std::to_string(*instance));
        const std::string name = claim_uid + "-" + d.str();
        if (auto why = inject::cdi::check_device_name(name); !why.empty())
            return fail(Errc::InvalidInput, "claim UID '" + claim_uid + "': " + why);
        renames[gen] = name;
        auto in_sub =
            std::find_if(sub.devices.begin(), sub.devices.end(),
                         [&](const inject::device::Device& c) { return c.index == d.index; });
        if (in_sub == sub.devices.end()) {
            sub.devices.push_back(*card);
            sub.devices.back().drs_instances.clear();
            in_sub = sub.devices.end() - 1;
        }
        if (instance) {
            for (const auto& in : card->drs_instances) {
                if (in.instance_id == *instance &&
                    std::none_of(in_sub->drs_instances.begin(), in_sub->drs_instances.end(),
                                 [&](const auto& x) { return x.instance_id == in.instance_id; }))
                    in_sub->drs_instances.push_back(in);
            }
        }
    }
    if (devices.empty()) return fail(Errc::InvalidInput, "no devices to prepare");
    std::sort(sub.devices.begin(), sub.devices.end(),
              [](const auto& a, const auto& b) { return a.index < b.index; });
    auto opts = base;
    opts.vendor = std::string(kCdiVendor);
    opts.cls = std::string(kCdiClass);
    opts.names = inject::cdi::NameStrategy::Index;
    opts.all_device = false;
    INJECT_TRY(auto spec, inject::cdi::generate(sub, opts));
    std::vector<inject::cdi::Device> kept;
    for (auto& d : spec.devices) {
        const auto it = renames.find(d.name);
        if (it == renames.end()) continue;  // a card present only for its DRS instance
        d.name = it->second;
        kept.push_back(std::move(d));
    }
    std::sort(kept.begin(), kept.end(),
              [](const auto& a, const auto& b) { return a.name < b.name; });
    spec.devices = std::move(kept);
    spec.version = inject::cdi::minimum_version(spec);
    return spec;
}

inject::Result<bool> write_claim_spec(const std::string& cdi_root, const std::string& claim_uid,
                                      const inject::cdi::Spec& spec, bool only_if_changed) {
    const std::string path = join(cdi_root, spec_file_name(claim_uid));
    const std::string text = inject::cdi::to_yaml(spec);
    if (only_if_changed) {
        if (auto old = inject::fs::read_file(path, text.size() + 1); old && *old == text)
            return false;
    }
    inject::fs::AtomicWriteOptions o;
    o.mode = 0644;
    // Atomic (no reader sees half a spec) but not fsynced: the spec is derived from the
    // checkpoint, which is, and a start re-writes every spec that differs from it. The usual
    // cdi-root, /var/run/cdi, is a tmpfs anyway.
    o.durable = false;
    if (auto r = inject::fs::atomic_write(path, text, o); !r)
        return fail(std::move(r).error().context("writing CDI spec '" + path + "'"));
    return true;
}

inject::Result<void> remove_claim_spec(const std::string& cdi_root, const std::string& claim_uid) {
    const std::string path = join(cdi_root, spec_file_name(claim_uid));
    if (::unlink(path.c_str()) != 0 && errno != ENOENT)
        return fail(inject::sys_error("removing CDI spec '" + path + "'"));
    return inject::ok();
}

namespace {

/// `pick(name)` of every entry in `cdi_root` that gives a non-empty string (sorted; a missing
/// folder has none).
inject::Result<std::vector<std::string>> names_in(
    const std::string& cdi_root, const std::function<std::string(const std::string&)>& pick) {
    std::vector<std::string> out;
    DIR* dir = ::opendir(cdi_root.c_str());
    if (!dir) {
        if (errno == ENOENT) return out;
        return fail(inject::sys_error("reading CDI folder '" + cdi_root + "'"));
    }
    while (const dirent* e = ::readdir(dir)) {
        if (auto v = pick(e->d_name); !v.empty()) out.push_back(std::move(v));
    }
    ::closedir(dir);
    std::sort(out.begin(), out.end());
    return out;
}

}  // namespace

bool is_temp_spec(const std::string& file_name) {
    const auto target = inject::fs::atomic_temp_target(file_name);
    return !target.empty() && !claim_uid_of(target).empty();
}

inject::Result<std::vector<std::string>> remove_temp_specs(const std::string& cdi_root) {
    INJECT_TRY(auto temps, names_in(cdi_root, [](const std::string& n) {
                   return is_temp_spec(n) ? n : std::string();
               }));
    for (const auto& name : temps)
        if (const std::string path = join(cdi_root, name);
            ::unlink(path.c_str()) != 0 && errno != ENOENT)
            return fail(inject::sys_error("removing the temporary CDI spec '" + path + "'"));
    return temps;
}

inject::Result<std::vector<std::string>> claim_specs_in(const std::string& cdi_root) {
    return names_in(cdi_root, claim_uid_of);
}

}  // namespace dra
