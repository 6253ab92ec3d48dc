// SPDX-License-Identifier: Apache-2.0
// `enflame-ctk cdi generate|list|validate`, and `enflame-ctk generate` (the name Enflame's own
// material uses: the same command with the same flags). generate writes only the spec to
// stdout, so it can be piped; everything else goes to stderr.
#include <unistd.h>

#include <filesystem>
#include <iostream>
#include <memory>

#include "context.hpp"
#include "inject/cdi_generate.hpp"
#include "inject/cdi_io.hpp"
#include "inject/cdi_provenance.hpp"
#include "inject/cdi_registry.hpp"
#include "inject/cdi_validate.hpp"
#include "inject/discover.hpp"
#include "inject/fs.hpp"

namespace ctk {
namespace {

struct GenerateArgs {
    std::string output;
    std::string format;
    std::string vendor;
    std::string cls;
    std::string strategy = "both";
    std::string driver_root;
    std::string dev_root;
    std::vector<std::string> library_search_paths;
    bool no_all_device = false;
    bool no_drs = false;
    std::string backend = "auto";
    std::vector<std::string> disable_hooks;
};

[[noreturn]] void finish(const inject::Result<void>& r) {
    if (!r) throw Exit{report(r.error())};
    throw Exit{0};
}

// The absolute path of this binary, named in the spec's hook.
inject::Result<std::string> self_path() {
    std::string buf(4096, '\0');
    const ssize_t n = ::readlink("/proc/self/exe", buf.data(), buf.size());
    if (n <= 0 || static_cast<std::size_t>(n) >= buf.size())
        return inject::fail(inject::sys_error("reading /proc/self/exe"));
    buf.resize(static_cast<std::size_t>(n));
    return buf;
}

inject::Result<void> write_output(const std::string& output, const std::string& text) {
    if (output.empty() || output == "-") {
        std::cout << text << std::flush;
        return inject::ok();
    }
    const auto parent = std::filesystem::path(output).parent_path();
    if (!parent.empty()) {
        std::error_code ec;
        std::filesystem::create_directories(parent, ec);
        if (ec)
            return inject::fail(inject::Errc::Io,
                                "creating '" + parent.string() + "': " + ec.message());
    }
    inject::fs::AtomicWriteOptions wo;
    wo.mode = 0644;
    auto r = inject::fs::atomic_write(output, text, wo);
    if (!r) return inject::fail(std::move(r).error().context("writing CDI spec '" + output + "'"));
    return inject::ok();
}

inject::Result<void> generate(Context& ctx, const GenerateArgs& a) {
    INJECT_TRY(auto cfg, ctx.config());
    INJECT_TRY(auto gopts, inject::cdi::options_from(cfg));
    auto dopts = inject::discover::options_from(cfg);
    INJECT_TRY(dopts.backend, inject::discover::parse_backend(a.backend));
    dopts.with_drs = !a.no_drs;
    INJECT_TRY(gopts.names, inject::cdi::parse_name_strategy(a.strategy));
    if (!a.vendor.empty()) gopts.vendor = a.vendor;
    if (!a.cls.empty()) gopts.cls = a.cls;
    if (!a.driver_root.empty()) gopts.driver_root = dopts.driver_root = a.driver_root;
    if (!a.dev_root.empty()) gopts.dev_root = dopts.dev_root = a.dev_root;
    if (!a.library_search_paths.empty())
        gopts.library_search_paths = dopts.library_search_paths = a.library_search_paths;
    gopts.all_device = !a.no_all_device;
    for (const auto& h : a.disable_hooks) {
        if (h != "update-ldcache" && h != "all")
            return inject::fail(inject::Errc::InvalidInput,
                                "--disable-hook '" + h + "': want update-ldcache or all");
    }
    if (a.disable_hooks.empty()) {
        INJECT_TRY(gopts.ctk_path, self_path());
    }
    inject::cdi::Format format = inject::cdi::format_for_path(a.output);
    if (!a.format.empty()) {
        INJECT_TRY(format, inject::cdi::parse_format(a.format));
    }

    auto host = inject::discover::discover(dopts);
    if (!host) return inject::fail(std::move(host).error().context("discovering Enflame cards"));
    auto spec = inject::cdi::generate(*host, gopts);
    if (!spec) return inject::fail(std::move(spec).error().context("generating the CDI spec"));
    std::string text = inject::cdi::serialize(*spec, format);
    // What it was generated from, so doctor and the shim can tell when it went stale (a comment:
    // a CDI annotation would need cdiVersion 0.6.0, which podman 4.3.1 refuses).
    if (format == inject::cdi::Format::Yaml)
        text = inject::cdi::generated_from_comment(inject::cdi::generated_from(*host)) + text;
    return write_output(a.output, text);
}

void add_generate(CLI::App& parent, const std::string& name, const std::string& help,
                  Context& ctx) {
    auto a = std::make_shared<GenerateArgs>();
    auto* cmd = parent.add_subcommand(name, help);
    cmd->add_option("-o,--output", a->output,
                    "write the spec here atomically (mode 0644); '-' or none: stdout");
    cmd->add_option("--format", a->format,
                    "yaml or json (default: from the --output extension, else yaml)");
    cmd->add_option("--vendor", a->vendor, "CDI vendor (default: from cdi-kind, enflame.com)");
    cmd->add_option("--class", a->cls, "CDI class (default: from cdi-kind, gpu)");
    cmd->add_option("--device-name-strategy", a->strategy, "index, uuid or both")
        ->capture_default_str();
    cmd->add_option("--driver-root", a->driver_root,
                    "where efsmi, libefml and libraries are found (default: config)");
    cmd->add_option("--dev-root", a->dev_root, "where dev/gcu* are found (default: config)");
    cmd->add_option("--library-search-path", a->library_search_paths,
                    "folder searched for libraries (repeatable; replaces the configured list)");
    cmd->add_flag("--no-all-device", a->no_all_device, "do not add the 'all' device");
    cmd->add_flag("--no-drs", a->no_drs,
                  "do not ask efsmi for DRS instances (saves one or two efsmi runs)");
    cmd->add_option("--backend", a->backend, "discovery: auto, efsmi-json, efsmi-text or libefml")
        ->capture_default_str();
    cmd->add_option("--disable-hook", a->disable_hooks,
                    "leave out a hook: update-ldcache or all (repeatable)");
    cmd->callback([a, &ctx] { finish(generate(ctx, *a)); });
}

std::vector<std::string> spec_dirs(Context& ctx, const std::vector<std::string>& given) {
    if (!given.empty()) return given;
    auto cfg = ctx.config();
    if (!cfg) throw Exit{report(cfg.error())};
    return cfg->runtime.spec_dirs;
}

int list(Context& ctx, const std::vector<std::string>& dirs_given) {
    auto reg = inject::cdi::Registry::load(spec_dirs(ctx, dirs_given));
    if (!reg) return report(reg.error());
    for (const auto& p : reg->problems()) std::cerr << "warning: skipped: " << p << "\n";
    for (const auto& c : reg->conflicts()) std::cerr << "warning: conflict: " << c << "\n";
    for (const auto& n : reg->device_names()) std::cout << n << "\n";
    return 0;
}

// The newest cdiVersion Debian 12's podman 4.3.1 accepts (measured, see schemas/README.md).
// A newer version is valid CDI, so this is a warning, not a problem.
constexpr std::string_view kPodman43MaxVersion = "0.5.0";

void warn_version(const std::string& file, const inject::cdi::Spec& spec) {
    if (inject::cdi::compare_versions(spec.version, kPodman43MaxVersion) > 0)
        std::cerr << "warning: " << file << ": cdiVersion '" << spec.version
                  << "' is newer than podman 4.3.1 accepts (up to " << kPodman43MaxVersion << ")\n";
}

int validate(Context& ctx, const std::vector<std::string>& files,
             const std::vector<std::string>& dirs_given) {
    std::size_t problems = 0;
    if (!files.empty()) {
        for (const auto& f : files) {
            auto spec = inject::cdi::load_spec(f);
            if (!spec) {
                std::cout << spec.error().what() << "\n";
                ++problems;
                continue;
            }
            const auto found = inject::cdi::validate(*spec, f);
            for (const auto& p : found) std::cout << p.text() << "\n";
            problems += found.size();
            if (found.empty()) warn_version(f, *spec);
        }
    } else {
        auto reg = inject::cdi::Registry::load(spec_dirs(ctx, dirs_given));
        if (!reg) return report(reg.error());
        for (const auto& p : reg->problems()) std::cout << p << "\n";
        for (const auto& c : reg->conflicts()) std::cout << c << "\n";
        for (const auto& ls : reg->specs()) warn_version(ls.path, ls.spec);
        problems = reg->problems().size() + reg->conflicts().size();
    }
    std::cout.flush();
    if (problems == 0) return 0;
    std::cerr << "error: " << problems << (problems == 1 ? " problem" : " problems") << " found\n";
    return 1;
}

void register_cdi(CLI::App& app, Context& ctx) {
    auto* cdi =
        app.add_subcommand("cdi", "Container Device Interface specs: generate, list, validate");
    cdi->require_subcommand(1);
    add_generate(*cdi, "generate", "write the CDI spec for the Enflame cards of this host", ctx);

    auto list_dirs = std::make_shared<std::vector<std::string>>();
    auto* ls =
        cdi->add_subcommand("list", "print the fully qualified CDI device names in the spec dirs");
    ls->add_option("--spec-dir", *list_dirs, "spec dir (repeatable; default: config spec-dirs)");
    ls->callback([list_dirs, &ctx] { throw Exit{list(ctx, *list_dirs)}; });

    auto files = std::make_shared<std::vector<std::string>>();
    auto val_dirs = std::make_shared<std::vector<std::string>>();
    auto* val =
        cdi->add_subcommand("validate", "check CDI spec files; print every problem, exit 1 if any");
    val->add_option("files", *files, "spec files (default: every spec in the spec dirs)");
    val->add_option("--spec-dir", *val_dirs, "spec dir (repeatable; default: config spec-dirs)");
    val->callback([files, val_dirs, &ctx] { throw Exit{validate(ctx, *files, *val_dirs)}; });

    add_generate(app, "generate", "same as 'cdi generate'", ctx);
}

const Registrar reg{20, register_cdi};

}  // namespace
}  // namespace ctk
