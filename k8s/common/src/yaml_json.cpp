// SPDX-License-Identifier: Apache-2.0
#include "k8s/yaml_json.hpp"

#include <yaml-cpp/yaml.h>

#include <regex>
#include <stdexcept>
#include <string>

namespace k8s {
namespace {

nlohmann::json scalar(const YAML::Node& n) {
    const std::string& v = n.Scalar();
    if (n.Tag() != "?") return v;  // quoted: a string
    if (v.empty() || v == "~" || v == "null" || v == "Null" || v == "NULL") return nullptr;
    if (v == "true" || v == "True" || v == "TRUE") return true;
    if (v == "false" || v == "False" || v == "FALSE") return false;
    static const std::regex kInt("^[-+]?[0-9]+$"),
        kFloat("^[-+]?([0-9]*\\.[0-9]+|[0-9]+\\.[0-9]*)([eE][-+]?[0-9]+)?$");
    if (std::regex_match(v, kInt)) {
        try {
            return std::stoll(v);
        } catch (const std::out_of_range&) {
            return v;
        }
    }
    if (std::regex_match(v, kFloat)) return std::stod(v);
    return v;
}

}  // namespace

nlohmann::json yaml_to_json(const YAML::Node& n) {
    if (!n.IsDefined()) return nullptr;  // also a key a map does not have
    switch (n.Type()) {
        case YAML::NodeType::Map: {
            nlohmann::json o = nlohmann::json::object();
            for (const auto& kv : n) o[kv.first.Scalar()] = yaml_to_json(kv.second);
            return o;
        }
        case YAML::NodeType::Sequence: {
            nlohmann::json a = nlohmann::json::array();
            for (const auto& e : n) a.push_back(yaml_to_json(e));
            return a;
        }
        case YAML::NodeType::Scalar:
            return scalar(n);
        default:
            return nullptr;
    }
}

}  // namespace k8s
