// SPDX-License-Identifier: Apache-2.0
// OCI config.json edits: any JSON document either takes the edits or gives an Error (never a
// crash or an exception), and applying the same edits twice changes nothing the second time.
#include <cstddef>
#include <cstdint>
#include <nlohmann/json.hpp>

#include "inject/oci.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    auto spec = nlohmann::ordered_json::parse(data, data + size, nullptr, false);
    if (spec.is_discarded()) return 0;
    inject::cdi::ContainerEdits edits;
    edits.env = {"ENFLAME_VISIBLE_DEVICES=void", "TOPS_VISIBLE_DEVICES=DRS-x"};
    inject::cdi::DeviceNode node;
    node.path = "/dev/gcu0";
    node.type = "c";
    node.major = 238;
    node.minor = 0;
    node.file_mode = 0666;
    edits.device_nodes = {node};
    edits.mounts = {
        {"/usr/lib/libefml.so.1", "/usr/lib/libefml.so.1", "", {"ro", "nosuid", "nodev", "rbind"}}};
    edits.hooks = {
        {"createContainer", "/usr/bin/enflame-ctk", {"enflame-ctk", "hook"}, {"PATH=/bin"}, {}}};
    edits.additional_gids = {44};
    if (!inject::oci::apply(spec, edits)) return 0;
    auto once = spec.dump();
    if (!inject::oci::apply(spec, edits) || spec.dump() != once) __builtin_trap();
    return 0;
}
