// SPDX-License-Identifier: Apache-2.0
#pragma once

// What the API-client tests (apiserver_test.cpp, apiserver_config_test.cpp) share: a client
// that fails the test when it cannot be made, and a file's bytes.

#include <gtest/gtest.h>

#include <fstream>
#include <iterator>
#include <memory>
#include <string>

#include "k8s/apiserver.hpp"

namespace k8s_test {

/// A client for `cfg`; nullptr, with the test failed, when it cannot be made.
inline std::unique_ptr<k8s::api::Client> client(const k8s::api::Config& cfg) {
    auto c = k8s::api::Client::create(cfg);
    if (!c) ADD_FAILURE() << c.error().what();
    return c ? std::move(*c) : nullptr;
}

/// The whole of the file at `path` ("" when it cannot be read).
inline std::string slurp(const std::string& path) {
    std::ifstream in(path);
    return {std::istreambuf_iterator<char>(in), {}};
}

}  // namespace k8s_test
