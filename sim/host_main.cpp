// SPDX-License-Identifier: Apache-2.0
// enflame-sim-host: builds a simulated Enflame host from a description, or prints an
// example description.
//   enflame-sim-host build --desc FILE --root DIR [--sim-dir DIR]
//   enflame-sim-host example --cards N [--product S60|T10] [--drs] [--unhealthy I]
//   enflame-sim-host telemetry --root R --card I key=value...
//   enflame-sim-host event --root R --card I --type T [--message M]
//   enflame-sim-host driver --root R gone|back
//   enflame-sim-host unplug --root R --card I

#include <fcntl.h>
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <cerrno>
#include <cstdio>
#include <exception>
#include <filesystem>

#include "builder.hpp"
#include "desc.hpp"
#include "example.hpp"
#include "model_json.hpp"
#include "telemetry.hpp"

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

int complain(const std::string& why) {
    std::fprintf(stderr, "error: %s\n", why.c_str());
    return 1;
}

// The folder of enflame-sim.json in a built root (usr/local/efsmi/efsmi-<ver>/), or empty.
std::string desc_dir(const std::string& root) {
    std::error_code ec;
    const std::filesystem::path base = std::filesystem::path(root) / "usr/local/efsmi";
    for (const auto& e : std::filesystem::directory_iterator(base, ec)) {
        if (std::filesystem::exists(e.path() / sim::kDescFile, ec)) return e.path().string();
    }
    return {};
}

// The description folder of `root` after checking that card `card` exists; empty + message.
std::string card_dir(const std::string& root, std::uint32_t card) {
    const std::string dir = desc_dir(root);
    if (dir.empty()) {
        (void)complain("root '" + root +
                       "': no simulated host (no usr/local/efsmi/*/enflame-sim.json)");
        return {};
    }
    const sim::Host h = sim::load_host_json(dir + "/" + std::string(sim::kDescFile));
    if (card >= h.cards.size()) {
        (void)complain("--card " + std::to_string(card) + ": the host has " +
                       std::to_string(h.cards.size()) + " cards");
        return {};
    }
    return dir;
}

int run_telemetry(const std::string& root, std::uint32_t card, const std::vector<std::string>& kv) {
    const std::string dir = card_dir(root, card);
    if (dir.empty()) return 1;
    if (auto why = sim::set_telemetry(dir, card, kv); !why.empty()) return complain(why);
    return 0;
}

int run_event(const std::string& root, std::uint32_t card, const std::string& type,
              const std::string& msg) {
    const auto t = sim::event_type(type);
    if (!t)
        return complain("--type '" + type +
                        "': expected suspend, reset-start, reset-finish, eid or a number");
    const std::string dir = card_dir(root, card);
    if (dir.empty()) return 1;
    if (auto why = sim::append_event(dir, {card, *t, msg}); !why.empty()) return complain(why);
    return 0;
}

int run_driver(const std::string& root, const std::string& state) {
    const std::string dir = desc_dir(root);
    if (dir.empty())
        return complain("root '" + root +
                        "': no simulated host (no usr/local/efsmi/*/enflame-sim.json)");
    const std::string flag = dir + "/" + std::string(sim::kDriverGoneFile);
    if (state == "back") {
        if (::unlink(flag.c_str()) != 0 && errno != ENOENT)
            return complain("cannot remove '" + flag + "'");
        return 0;
    }
    const int fd = ::open(flag.c_str(), O_WRONLY | O_CREAT | O_CLOEXEC, 0644);
    if (fd < 0) return complain("cannot create '" + flag + "'");
    ::close(fd);
    return 0;
}

// A card pulled out while daemons run (a hot unplug, a card the driver lost): gone from the
// description efsmi and libefml read on every call, its device node and its sysfs folder gone.
// The other cards keep their index and minor.
int run_unplug(const std::string& root, std::uint32_t card) {
    const std::string dir = card_dir(root, card);
    if (dir.empty()) return 1;
    const std::string path = dir + "/" + std::string(sim::kDescFile);
    sim::Host h = sim::load_host_json(path);
    const sim::Card gone = h.cards[card];
    h.cards.erase(h.cards.begin() + card);
    if (auto why = sim::write_file_atomic(path, sim::to_json(h).dump(2) + "\n"); !why.empty())
        return complain(why);
    const std::string node = root + "/dev/gcu" + std::to_string(gone.minor);
    if (::unlink(node.c_str()) != 0 && errno != ENOENT)
        return complain("cannot remove '" + node + "'");
    std::error_code ec;
    std::filesystem::remove_all(root + "/sys/bus/pci/devices/" + gone.bus_id, ec);
    if (ec)
        return complain("cannot remove the sysfs folder of card " + std::to_string(card) + ": " +
                        ec.message());
    return 0;
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

    std::string root;
    std::uint32_t card = 0;
    std::vector<std::string> kv;
    auto* telemetry = app.add_subcommand("telemetry", "set a card's readings while daemons run");
    telemetry->add_option("--root", root, "a built root")->required();
    telemetry->add_option("--card", card, "card index")->required();
    telemetry->add_option("settings", kv, "key=value ... (see sim/README.md)")->required();

    std::string type, message;
    auto* event = app.add_subcommand("event", "send a driver event");
    event->add_option("--root", root, "a built root")->required();
    event->add_option("--card", card, "card index")->required();
    event->add_option("--type", type, "suspend, reset-start, reset-finish, eid or a number")
        ->required();
    event->add_option("--message", message, "event text");

    std::string state;
    auto* driver =
        app.add_subcommand("driver", "unload (gone) or reload (back) the simulated driver");
    driver->add_option("--root", root, "a built root")->required();
    driver->add_option("state", state, "gone or back")
        ->required()
        ->check(CLI::IsMember({"gone", "back"}));

    auto* unplug =
        app.add_subcommand("unplug", "take card --card out of the host while daemons run");
    unplug->add_option("--root", root, "a built root")->required();
    unplug->add_option("--card", card, "card index")->required();

    try {
        app.parse(argc, argv);
    } catch (const CLI::ParseError& e) {
        return app.exit(e);
    }
    if (build->parsed()) return run_build(desc, opts);
    if (telemetry->parsed()) return run_telemetry(root, card, kv);
    if (event->parsed()) return run_event(root, card, type, message);
    if (driver->parsed()) return run_driver(root, state);
    if (unplug->parsed()) return run_unplug(root, card);
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
