// SPDX-License-Identifier: Apache-2.0
#pragma once

// What the fake kubelets print: a protobuf message as one line of JSON with upstream's field
// names, zero values included (so a test sees "error":"" rather than nothing).

#include <google/protobuf/message.h>
#include <google/protobuf/util/json_util.h>

#include <string>

namespace k8s_test {

inline std::string to_json(const google::protobuf::Message& m) {
    std::string out;
    google::protobuf::util::JsonPrintOptions o;
    o.preserve_proto_field_names = true;
    o.always_print_primitive_fields = true;
    (void)google::protobuf::util::MessageToJsonString(m, &out, o);
    return out;
}

}  // namespace k8s_test
