// SPDX-License-Identifier: Apache-2.0
// DRS operations (inject/drs.hpp) through efsmi, found and run like discovery runs it.
#include <spdlog/fmt/ranges.h>

#include <algorithm>

#include "device/backends.hpp"
#include "inject/drs.hpp"

namespace inject::drs {
namespace {

/// "efsmi <args>": how errors name the command.
std::string command_text(const std::vector<std::string>& args) {
    return fmt::format("efsmi {}", fmt::join(args, " "));
}

std::vector<std::string> card_args(std::uint32_t card, std::initializer_list<std::string> rest) {
    std::vector<std::string> args{"-i", std::to_string(card), "--drs"};
    args.insert(args.end(), rest);
    return args;
}

/// Runs efsmi with `args`; an error names the command.
Result<std::string> run(const discover::Options& opts, const discover::detail::Efsmi& efsmi,
                        const std::vector<std::string>& args) {
    auto out = discover::detail::run_efsmi(opts, efsmi, args);
    if (!out) return fail(std::move(out).error().context(command_text(args)));
    return out;
}

Result<std::vector<device::DrsInstance>> list_with(const discover::Options& opts,
                                                   const discover::detail::Efsmi& efsmi,
                                                   std::uint32_t card) {
    INJECT_TRY(const std::string out, run(opts, efsmi, card_args(card, {"--list-instance"})));
    return discover::parse_efsmi_drs_instances(out, card);
}

}  // namespace

Result<std::vector<device::DrsInstance>> list_instances(const discover::Options& opts,
                                                        std::uint32_t card) {
    INJECT_TRY(const auto efsmi, discover::detail::find_efsmi(opts));
    auto r = list_with(opts, efsmi, card);
    if (!r)
        return fail(std::move(r).error().context("card " + std::to_string(card) +
                                                 ": listing DRS instances"));
    return r;
}

Result<device::DrsInstance> create_instance(const discover::Options& opts, std::uint32_t card,
                                            const device::DrsProfile& profile) {
    const std::string what = "card " + std::to_string(card) +
                             ": creating a DRS instance of profile '" + profile.name + "'";
    INJECT_TRY(const auto efsmi, discover::detail::find_efsmi(opts));
    auto before = list_with(opts, efsmi, card);
    if (!before) return fail(std::move(before).error().context(what));
    const auto args = card_args(card, {"--create-instance", std::to_string(profile.id)});
    if (auto r = discover::detail::run_efsmi(opts, efsmi, args); !r)
        return fail(std::move(r).error().context(what + " (" + command_text(args) + ")"));
    auto after = list_with(opts, efsmi, card);
    if (!after)
        return fail(std::move(after).error().context(what + ": reading back what efsmi made"));
    std::vector<device::DrsInstance> made;
    for (auto& in : *after) {
        const bool old = std::any_of(
            before->begin(), before->end(),
            [&](const device::DrsInstance& b) { return b.instance_id == in.instance_id; });
        if (!old && in.profile == profile.name) made.push_back(std::move(in));
    }
    if (made.size() != 1)
        return fail(Errc::Conflict,
                    what + ": efsmi answered, but the card shows " + std::to_string(made.size()) +
                        " new instance(s) of that profile, not 1 (someone else creating "
                        "or destroying instances at the same time?)");
    return std::move(made.front());
}

Result<void> destroy_instance(const discover::Options& opts, std::uint32_t card,
                              std::uint32_t instance_id) {
    const std::string what =
        "card " + std::to_string(card) + ": destroying DRS instance " + std::to_string(instance_id);
    INJECT_TRY(const auto efsmi, discover::detail::find_efsmi(opts));
    const auto args = card_args(card, {"--destroy-instance", std::to_string(instance_id)});
    if (auto r = discover::detail::run_efsmi(opts, efsmi, args); !r)
        return fail(std::move(r).error().context(what + " (" + command_text(args) + ")"));
    return ok();
}

}  // namespace inject::drs
