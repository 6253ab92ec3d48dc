// SPDX-License-Identifier: Apache-2.0
// The real Source: libefml for readings, discovery for names. libefml is opened on first use
// and dropped when it stops answering, so a driver that was unloaded and loaded again is met
// with a fresh EfmlInit (the old handle may not survive a real reload).
#include <filesystem>
#include <fstream>

#include "exporter/source.hpp"
#include "inject/discover.hpp"
#include "inject/fs.hpp"
#include "inject/log.hpp"

namespace exporter {
namespace {

class EfmlSource final : public Source {
public:
    explicit EfmlSource(inject::discover::Options opts) : opts_(std::move(opts)) {}

    inject::Result<std::uint32_t> count() override {
        if (!lib_) {
            auto lib = inject::efml::Library::open(opts_);
            if (!lib) return inject::fail(std::move(lib).error().context("opening libefml"));
            lib_ = std::move(*lib);
            inject::log::info("libefml {} loaded", lib_->path());
            if (const auto missing = lib_->missing(); !missing.empty())
                inject::log::info(
                    "libefml lacks {} of the calls we use: their readings stay unknown",
                    missing.size());
        }
        auto n = lib_->count();
        if (!n) lib_.reset();
        return n;
    }

    inject::Result<inject::efml::Sample> sample(std::uint32_t index) override {
        if (!lib_) return inject::fail(inject::Errc::Io, "libefml is not loaded");
        return lib_->sample(index);
    }

    inject::Result<inject::device::Host> discover() override {
        return inject::discover::discover(opts_);
    }

    std::map<std::string, std::string> pci_slots() override {
        std::map<std::string, std::string> out;
        std::error_code ec;
        const std::filesystem::path dir(inject::fs::join(opts_.driver_root, "/sys/bus/pci/slots"));
        for (const auto& e : std::filesystem::directory_iterator(dir, ec)) {
            std::ifstream in(e.path() / "address");
            std::string address;
            if (std::getline(in, address) && !address.empty())
                out.emplace(address, e.path().filename().string());
        }
        return out;
    }

private:
    inject::discover::Options opts_;
    std::unique_ptr<inject::efml::Library> lib_;
};

}  // namespace

std::unique_ptr<Source> make_efml_source(const inject::discover::Options& opts) {
    return std::make_unique<EfmlSource>(opts);
}

}  // namespace exporter
