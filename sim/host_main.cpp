// SPDX-License-Identifier: Apache-2.0
// enflame-sim-host: builds a simulated Enflame host from a description, or prints an
// example description.
//   enflame-sim-host build --desc FILE --root DIR [--sim-dir DIR]
//   enflame-sim-host example --cards N [--product S60|T10] [--drs] [--unhealthy I]

#include <CLI/CLI.hpp>
#include <cstdio>
#include <exception>
#include <filesystem>

#include "builder.hpp"
#include "desc.hpp"
#include "example.hpp"

namespace {

int report(const inject::Error& e) {
    std::fprintf(stderr, "error: %s\n", e.what().c_str());
    return 1;
}

std::string own_dir() {
    return std::filesystem::read_symlink("/proc/self/exe").parent_path().string();
}

int run_build(const std::string& desc, sim::BuildOptions opts) {
    auto host = sim::load_description(desc);
    if (!host) return report(host.error());
    if (opts.sim_dir.empty()) opts.sim_dir = own_dir();
    if (auto r = sim::build_host(*host, opts); !r) {
        return report(
            std::move(r).error().context("building a simulated host in '" + opts.root + "'"));
    }
    return 0;
}

int run_example(const sim::ExampleOptions& o) {
    auto text = sim::example_description(o);
    if (!text) return report(text.error());
    std::fwrite(text->data(), 1, text->size(), stdout);
    return std::fflush(stdout) == 0 ? 0 : 1;
}

int run(int argc, char** argv) {
    CLI::App app{"Builds a simulated Enflame host (test tool of enflame-container-toolkit)."};
    app.require_subcommand(1);

    std::string desc;
    sim::BuildOptions opts;
    auto* build = app.add_subcommand("build", "lay out a simulated host under --root");
    build->add_option("--desc", desc, "host description (YAML or JSON)")->required();
    build->add_option("--root", opts.root, "folder to (re)create")->required();
    build->add_option("--sim-dir", opts.sim_dir,
                      "where the simulators were built (default: this program's folder)");

    sim::ExampleOptions ex;
    std::uint32_t unhealthy = 0;
    auto* example = app.add_subcommand("example", "print an example description");
    example->add_option("--cards", ex.cards, "number of cards (1..128)")->required();
    example->add_option("--product", ex.product, "S60 or T10 (default S60)");
    example->add_flag("--drs", ex.drs, "add S60 DRS profiles and instances");
    auto* unhealthy_opt =
        example->add_option("--unhealthy", unhealthy, "index of an unhealthy card");

    try {
        app.parse(argc, argv);
    } catch (const CLI::ParseError& e) {
        return app.exit(e);
    }
    if (build->parsed()) return run_build(desc, opts);
    if (unhealthy_opt->count() > 0) ex.unhealthy = unhealthy;
    return run_example(ex);
}

}  // namespace

int main(int argc, char** argv) {
    try {
        return run(argc, argv);
    } catch (const std::exception& e) {  // last resort: the code paths return errors
        std::fprintf(stderr, "error: %s\n", e.what());
        return 1;
    }
}
