// SPDX-License-Identifier: Apache-2.0
#pragma once

// The DRA driver's test fixture (dra_driver_test.cpp, dra_driver_drs_test.cpp): an
// dra::Driver on a hand-built host, claims fed as JSON from claims_, specs and checkpoint in
// a fresh temp folder.

#include <gtest/gtest.h>

#include <filesystem>
#include <map>
#include <memory>
#include <string>

#include "dra/claim_cdi.hpp"
#include "dra/driver.hpp"
#include "dra_fixture.hpp"
#include "inject/fs.hpp"
#include "temp_dir.hpp"

namespace edra_test {

class DraDriver : public ::testing::Test {
protected:
    void SetUp() override {
        cdi_ = tmp_.path() + "/cdi";
        std::filesystem::create_directories(cdi_);
        std::filesystem::create_directories(tmp_.path() + "/root");
    }

    dra::DriverOptions options() const {
        dra::DriverOptions o;
        o.cdi_root = cdi_;
        o.checkpoint_path = tmp_.path() + "/checkpoint.json";
        o.node_name = "node1";
        o.cdi.driver_root = tmp_.path() + "/root";
        return o;
    }

    std::unique_ptr<dra::Driver> make(dra::DriverOptions o) {
        auto d = dra::Driver::create(
            std::move(o),
            [this](const std::string& ns, const std::string& name) -> inject::Result<Json> {
                ++fetches_;
                const auto it = claims_.find(ns + "/" + name);
                if (it == claims_.end())
                    return inject::fail(inject::Errc::NotFound,
                                        "GET /apis/resource.k8s.io/v1/namespaces/" + ns +
                                            "/resourceclaims/" + name + ": 404 Not Found");
                return it->second;
            },
            [this] {
                ++discoveries_;
                return inject::Result<inject::device::Host>(host_);
            });
        EXPECT_TRUE(d) << d.error().what();
        return d ? std::move(*d) : nullptr;
    }
    std::unique_ptr<dra::Driver> make() { return make(options()); }

    std::string spec_path(const std::string& uid) const {
        return cdi_ + "/" + dra::spec_file_name(uid);
    }
    bool has_spec(const std::string& uid) const { return std::filesystem::exists(spec_path(uid)); }
    std::string read(const std::string& path) const {
        auto t = inject::fs::read_file(path, 1 << 20);
        return t ? *t : std::string();
    }

    k8s_test::TempDir tmp_;
    std::string cdi_;
    inject::device::Host host_ = host2();
    std::map<std::string, Json> claims_;
    int fetches_ = 0, discoveries_ = 0;
};

}  // namespace edra_test
