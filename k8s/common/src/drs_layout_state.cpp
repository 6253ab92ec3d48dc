// SPDX-License-Identifier: Apache-2.0
#include "k8s/drs_layout_state.hpp"

#include <cerrno>
#include <filesystem>
#include <nlohmann/json.hpp>

#include "inject/fs.hpp"
#include "inject/text.hpp"

namespace k8s::drs {

inject::Result<void> write_layout_state(const std::string& path, const LayoutState& s) {
    const auto dir = std::filesystem::path(path).parent_path();
    std::error_code ec;
    std::filesystem::create_directories(dir, ec);
    if (ec) return inject::fail(inject::Errc::Io, "creating " + dir.string() + ": " + ec.message());
    nlohmann::json j{{"layout", s.layout}, {"state", s.state}};
    if (!s.device_plugin_config.empty()) j["devicePluginConfig"] = s.device_plugin_config;
    if (!s.boot_id.empty()) j["bootId"] = s.boot_id;
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
    LayoutState s{j["layout"].get<std::string>(), j["state"].get<std::string>()};
    if (j.contains("devicePluginConfig")) {
        if (!j["devicePluginConfig"].is_string())
            return inject::fail(inject::Errc::InvalidInput,
                                "'" + path + "': devicePluginConfig: want a string");
        s.device_plugin_config = j["devicePluginConfig"].get<std::string>();
    }
    if (j.contains("bootId")) {
        if (!j["bootId"].is_string())
            return inject::fail(inject::Errc::InvalidInput, "'" + path + "': bootId: want a string");
        s.boot_id = j["bootId"].get<std::string>();
    }
    return std::optional<LayoutState>(std::move(s));
}

inject::Result<std::string> read_boot_id(const std::string& path) {
    auto text = inject::fs::read_file(path, 128);
    if (!text) return inject::fail(std::move(text).error().context("reading the boot id"));
    const auto id = std::string(inject::text::trim(*text));
    if (id.empty()) return inject::fail(inject::Errc::InvalidInput, "'" + path + "': empty boot id");
    return id;
}

bool waits_for_layout(const std::optional<LayoutState>& s, const std::string& boot_id) {
    if (!s) return false;
    if (!s->boot_id.empty() && s->boot_id != boot_id) return true;
    return !s->layout.empty() && !s->settled();
}

inject::Result<std::string> plugin_config_path(const std::optional<LayoutState>& s,
                                               const std::string& dir,
                                               const std::string& fallback) {
    if (!s || s->device_plugin_config.empty() || dir.empty()) return fallback;
    const auto& name = s->device_plugin_config;
    const std::string what = std::string(kPluginConfigLabel) + "=" + name;
    const bool plain = name.find('/') == std::string::npos && name.front() != '.';
    if (!plain) return inject::fail(inject::Errc::InvalidInput, what + ": not a config name");
    const std::string file = (std::filesystem::path(dir) / (name + ".yaml")).string();
    std::error_code ec;
    if (!std::filesystem::is_regular_file(file, ec))
        return inject::fail(inject::Errc::NotFound,
                            what + ": no such device plugin config (" + file + ")");
    return file;
}

}  // namespace k8s::drs
