// SPDX-License-Identifier: Apache-2.0
// The request parser: the input is split into env entries (lines) and, after a line "--",
// annotations ("key=value" lines). Any input gives a Request or an Error, never a crash.
#include <cstddef>
#include <cstdint>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "inject/request.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    std::string_view text(reinterpret_cast<const char*>(data), size);
    std::vector<std::string> env;
    std::map<std::string, std::string> annotations;
    bool in_annotations = false;
    while (!text.empty()) {
        auto nl = text.find('\n');
        std::string_view line = text.substr(0, nl);
        text = nl == std::string_view::npos ? std::string_view{} : text.substr(nl + 1);
        if (line == "--") {
            in_annotations = true;
            continue;
        }
        if (!in_annotations) {
            env.emplace_back(line);
            continue;
        }
        auto eq = line.find('=');
        if (eq != std::string_view::npos)
            annotations[std::string(line.substr(0, eq))] = std::string(line.substr(eq + 1));
    }
    auto req = inject::request::parse(env, annotations);
    if (req) {
        inject::device::Host host;
        for (std::uint32_t i = 0; i < 4; ++i) {
            inject::device::Device d;
            d.index = i;
            d.minor = i;
            d.uuid = "TR6Y4601000" + std::to_string(i);
            host.devices.push_back(d);
        }
        (void)inject::request::select(*req, host);
    }
    return 0;
}
