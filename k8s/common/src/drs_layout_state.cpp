// SPDX-License-Identifier: Apache-2.0
#include "k8s/drs_layout_state.hpp"

#include <cerrno>
#include <filesystem>
#include <nlohmann/json.hpp>

#include "inject/fs.hpp"

namespace k8s::drs {

inject::Result<void> write_layout_state(const std::string& path, const LayoutState& s) {
    const auto dir = std::filesystem::path(path).parent_path();
    std::error_code ec;
    std::filesystem::create_directories(dir, ec);
    if (ec) return inject::fail(inject::Errc::Io, "creating " + dir.string() + ": " + ec.message());
    const nlohmann::json j{{"layout", s.layout}, {"state", s.state}};
    inject::fs::AtomicWriteOptions o;
    o.mode = 0644;
    if (auto r = inject::fs::atomic_write(path, j.dump() + "\n", o); !r)
        return inject::fail(std::move(r).error().context("writing '" + path + "'"));
    return inject::ok();
}

inject::Result<std::optional<LayoutState>> read_layout_state(const std::string& path) {
    auto text = inject::fs::read_file(path, 4096);
    if (!text) {
        if (text.error().code() == inject::Errc::NotFound) return std::optional<LayoutState>();
        return inject::fail(std::move(text).error().context("reading '" + path + "'"));
    }
    const auto j = nlohmann::json::parse(*text, nullptr, false);
    if (!j.is_object() || !j.contains("layout") || !j["layout"].is_string() ||
        !j.contains("state") || !j["state"].is_string())
        return inject::fail(inject::Errc::InvalidInput,
                            "'" + path + "': want {\"layout\": string, \"state\": string}");
    return std::optional<LayoutState>(
        LayoutState{j["layout"].get<std::string>(), j["state"].get<std::string>()});
}

}  // namespace k8s::drs
