// SPDX-License-Identifier: Apache-2.0
#include "drs-manager/cdi_spec.hpp"

#include <chrono>
#include <filesystem>

#include "inject/log.hpp"
#include "inject/toolkit.hpp"

namespace drs_manager {

CdiSpec::CdiSpec(std::string host_root, std::string toolkit_dir)
    : host_root_(std::move(host_root)), toolkit_dir_(std::move(toolkit_dir)) {
    std::error_code ec;
    if (!host_root_.empty() && !std::filesystem::is_directory(host_root_, ec)) {
        inject::log::info("--host-root '{}': not a folder, so the CDI spec is not refreshed",
                          host_root_);
        host_root_.clear();
    }
}

std::optional<std::string> CdiSpec::refresh(const inject::device::Host& host) {
    if (host_root_.empty()) return std::nullopt;
    std::set<std::string> instances;
    for (const auto& d : host.devices)
        for (const auto& in : d.drs_instances) instances.insert(inject::device::drs_address(in));
    if (done_for_ == instances) return std::nullopt;
    inject::toolkit::Options o;
    o.root = host_root_;
    o.toolkit_dir = toolkit_dir_;
    const auto t0 = std::chrono::steady_clock::now();
    auto r = inject::toolkit::refresh_cdi_spec(o);
    const auto ms = std::chrono::duration_cast<std::chrono::milliseconds>(
                        std::chrono::steady_clock::now() - t0)
                        .count();
    if (!r) {
        auto why = "the CDI spec is stale: " + r.error().what() +
                   "; a pod given a new DRS instance fails with unresolvable CDI devices "
                   "(hint: tried again every --retry)";
        if (why != last_warning_) inject::log::warn("{}", why);
        last_warning_ = why;
        return why;
    }
    done_for_ = std::move(instances);
    last_warning_.clear();
    switch (*r) {
        case inject::toolkit::SpecRefresh::NotInstalled:
            inject::log::info("no toolkit installed in '{}{}': no CDI spec to refresh", host_root_,
                              toolkit_dir_);
            break;
        case inject::toolkit::SpecRefresh::Unchanged:
            inject::log::info("CDI spec unchanged ({} DRS instance(s); generated in {} ms)",
                              done_for_->size(), ms);
            break;
        case inject::toolkit::SpecRefresh::Updated:
            inject::log::info("CDI spec refreshed: {} DRS instance(s) in {} ms", done_for_->size(),
                              ms);
            break;
    }
    return std::nullopt;
}

}  // namespace drs_manager
