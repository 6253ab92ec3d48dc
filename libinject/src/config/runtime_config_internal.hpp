// SPDX-License-Identifier: Apache-2.0
#pragma once
// Shared between the runtime_config_*.cpp files: one function set per file format.
#include "inject/runtime_config.hpp"

namespace inject::runtime_config::detail {

Result<std::string> json_configure(std::string_view text, const Options& o,
                                   std::string_view source);
Result<std::string> json_unconfigure(std::string_view text, const Options& o,
                                     std::string_view source,
                                     std::optional<std::string_view> original);

Result<std::string> toml_configure(Engine e, std::string_view text, const Options& o,
                                   std::string_view source);
Result<std::string> toml_unconfigure(Engine e, std::string_view text, const Options& o,
                                     std::string_view source,
                                     std::optional<std::string_view> original);
Result<std::string> toml_drop_in(Engine e, std::string_view main_text, const Options& o,
                                 std::string_view main_source);

}  // namespace inject::runtime_config::detail
