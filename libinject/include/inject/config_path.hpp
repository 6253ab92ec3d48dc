#pragma once
// Which config.toml a binary reads, before its own --config flag: every binary resolves it the
// same way (docs/requests.md, the config file), from the ENFLAME_CTK_CONFIG value its caller read.

#include <string>

#include "inject/config.hpp"

namespace inject::config {

/// The config file a binary reads and whether the user named it (a missing named file is an
/// error; a missing default is not).
struct ConfigPath {
    std::string path;
    bool given = false;
};

/// `env_value` is the caller's getenv(kPathEnv) (the library reads no environment): set and not
/// empty names the file, else kDefaultPath.
[[nodiscard]] inline ConfigPath config_path_from_env(const char* env_value) {
    if (env_value != nullptr && *env_value != '\0') return {env_value, true};
    return {std::string(kDefaultPath), false};
}

}  // namespace inject::config
