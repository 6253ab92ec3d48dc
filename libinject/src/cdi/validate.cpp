// SPDX-License-Identifier: Apache-2.0
// The CDI spec's rules, following the reference library (container-device-interface
// pkg/parser, pkg/cdi/container-edits.go, specs-go/version.go), plus one of our own: every path
// must be absolute (podman 4.3.1 fails later, at stat or mount time, on a relative one).
#include <algorithm>
#include <charconv>
#include <set>

#include "inject/cdi_validate.hpp"

namespace inject::cdi {
namespace {

bool is_letter(char c) {
    return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z');
}
bool is_digit(char c) {
    return c >= '0' && c <= '9';
}
bool is_alnum(char c) {
    return is_letter(c) || is_digit(c);
}

std::string q(std::string_view s) {
    return "'" + std::string(s) + "'";
}

// vendor and class: a letter first, a letter or digit last, letters, digits, '_', '-', '.'.
std::string check_vendor_or_class(std::string_view what, std::string_view name) {
    if (name.empty()) return "empty " + std::string(what);
    if (!is_letter(name.front()))
        return std::string(what) + " " + q(name) + " must start with a letter";
    for (char c : name)
        if (!is_alnum(c) && c != '_' && c != '-' && c != '.')
            return std::string(what) + " " + q(name) + " has invalid character " +
                   q(std::string(1, c));
    if (!is_alnum(name.back()))
        return std::string(what) + " " + q(name) + " must end with a letter or digit";
    return {};
}

class Checker {
public:
    Checker(std::string_view source, std::vector<Problem>& out) : source_(source), out_(out) {}

    void add(const std::string& where, std::string message) {
        out_.push_back(
            Problem{where.empty() ? std::string(source_) : std::string(source_) + ": " + where,
                    std::move(message)});
    }

    void env(const std::string& where, const std::vector<std::string>& env) {
        for (const auto& e : env) {
            auto eq = e.find('=');
            if (eq == std::string::npos || eq == 0)
                add(where, "env entry " + q(e) + " is not KEY=VALUE");
        }
    }

    void path(const std::string& where, std::string_view field, const std::string& p,
              bool required) {
        if (p.empty()) {
            if (required) add(where, "empty " + std::string(field));
        } else if (p.front() != '/') {
            add(where, std::string(field) + " " + q(p) + " is not absolute");
        }
    }

    void edits(const std::string& where, const ContainerEdits& e) {
        const std::string pre = where.empty() ? "" : where + ": ";
        env(where, e.env);
        for (std::size_t i = 0; i < e.device_nodes.size(); ++i) {
            const auto& d = e.device_nodes[i];
            const std::string w = pre + "deviceNodes[" + std::to_string(i) + "]";
            path(w, "path", d.path, true);
            path(w, "hostPath", d.host_path, false);
            if (!d.type.empty() && d.type != "b" && d.type != "c" && d.type != "u" && d.type != "p")
                add(w, "invalid type " + q(d.type) + ": want b, c, u or p");
            if ((d.major && *d.major < 0) || (d.minor && *d.minor < 0))
                add(w, "negative device number " + std::to_string(d.major.value_or(0)) + ":" +
                           std::to_string(d.minor.value_or(0)));
            if (!d.permissions.empty() &&
                d.permissions.find_first_not_of("rwm") != std::string::npos)
                add(w, "invalid permissions " + q(d.permissions) + ": want a subset of rwm");
            if (d.file_mode && (*d.file_mode & ~07777u) != 0)
                add(w, "fileMode " + std::to_string(*d.file_mode) + " has bits beyond 07777");
        }
        for (std::size_t i = 0; i < e.hooks.size(); ++i) {
            const auto& h = e.hooks[i];
            const std::string w = pre + "hooks[" + std::to_string(i) + "]";
            static const std::set<std::string, std::less<>> kHooks = {
                "prestart",       "createRuntime", "createContainer",
                "startContainer", "poststart",     "poststop"};
            if (!kHooks.contains(h.hook_name))
                add(w, "invalid hook name " + q(h.hook_name) +
                           ": want prestart, createRuntime, createContainer, startContainer, "
                           "poststart or poststop");
            path(w, "path", h.path, true);
            env(w, h.env);
            if (h.timeout && *h.timeout <= 0)
                add(w, "timeout " + std::to_string(*h.timeout) + " is not positive");
        }
        for (std::size_t i = 0; i < e.mounts.size(); ++i) {
            const auto& m = e.mounts[i];
            const std::string w = pre + "mounts[" + std::to_string(i) + "]";
            path(w, "hostPath", m.host_path, true);
            path(w, "containerPath", m.container_path, true);
        }
    }

private:
    std::string_view source_;
    std::vector<Problem>& out_;
};

}  // namespace

std::string check_vendor(std::string_view vendor) {
    return check_vendor_or_class("vendor", vendor);
}
std::string check_class(std::string_view cls) {
    return check_vendor_or_class("class", cls);
}

std::string check_device_name(std::string_view name) {
    if (name.empty()) return "empty device name";
    if (!is_alnum(name.front()))
        return "device name " + q(name) + " must start with a letter or digit";
    for (char c : name)
        if (!is_alnum(c) && c != '_' && c != '-' && c != '.' && c != ':')
            return "device name " + q(name) + " has invalid character " + q(std::string(1, c));
    if (!is_alnum(name.back()))
        return "device name " + q(name) + " must end with a letter or digit";
    return {};
}

const std::vector<std::string>& known_versions() {
    static const std::vector<std::string> k = {"0.1.0", "0.2.0", "0.3.0", "0.4.0",
                                               "0.5.0", "0.6.0", "0.7.0", "0.8.0"};
    return k;
}

int compare_versions(std::string_view a, std::string_view b) {
    auto part = [](std::string_view& s) {
        unsigned v = 0;
        auto dot = s.find('.');
        auto head = s.substr(0, dot);
        std::from_chars(head.data(), head.data() + head.size(), v);
        s = dot == std::string_view::npos ? std::string_view() : s.substr(dot + 1);
        return v;
    };
    if (!a.empty() && a.front() == 'v') a.remove_prefix(1);
    if (!b.empty() && b.front() == 'v') b.remove_prefix(1);
    for (int i = 0; i < 3; ++i) {
        unsigned x = part(a), y = part(b);
        if (x != y) return x < y ? -1 : 1;
    }
    return 0;
}

std::string minimum_version(const Spec& spec) {
    bool v070 = !spec.edits.additional_gids.empty();
    bool v060 = !spec.annotations.empty();
    bool v050 = false, v040 = false;
    auto scan = [&](const ContainerEdits& e) {
        for (const auto& d : e.device_nodes) v050 = v050 || !d.host_path.empty();
        for (const auto& m : e.mounts) v040 = v040 || !m.type.empty();
    };
    scan(spec.edits);
    for (const auto& d : spec.devices) {
        if (!d.name.empty() && !is_letter(d.name.front())) v050 = true;
        if (!d.annotations.empty()) v060 = true;
        if (!d.edits.additional_gids.empty()) v070 = true;
        scan(d.edits);
    }
    if (auto slash = spec.kind.find('/');
        slash != std::string::npos && spec.kind.find('.', slash) != std::string::npos)
        v060 = true;  // a dot in the class
    if (v070) return "0.7.0";
    if (v060) return "0.6.0";
    if (v050) return "0.5.0";
    if (v040) return "0.4.0";
    return "0.3.0";
}

std::vector<Problem> validate(const Spec& spec, std::string_view source) {
    std::vector<Problem> out;
    Checker c(source, out);
    const auto& known = known_versions();
    if (spec.version.empty()) {
        c.add("", "missing cdiVersion");
    } else if (std::find(known.begin(), known.end(), spec.version) == known.end()) {
        c.add("", "unknown cdiVersion " + q(spec.version) + ": want one of 0.1.0 to 0.8.0");
    } else if (const auto need = minimum_version(spec); compare_versions(need, spec.version) > 0) {
        c.add("", "cdiVersion " + q(spec.version) + " is too old for this spec: it needs " + need);
    }

    if (spec.kind.empty()) {
        c.add("", "missing kind");
    } else if (auto slash = spec.kind.find('/'); slash == std::string::npos) {
        c.add("", "kind " + q(spec.kind) + " is not vendor/class");
    } else {
        if (auto e = check_vendor(spec.kind.substr(0, slash)); !e.empty()) c.add("", "kind: " + e);
        if (auto e = check_class(spec.kind.substr(slash + 1)); !e.empty()) c.add("", "kind: " + e);
    }
    for (const auto& [k, v] : spec.annotations)
        if (k.empty()) c.add("", "empty annotation key");

    if (spec.devices.empty()) c.add("", "no devices");
    std::set<std::string, std::less<>> seen;
    for (std::size_t i = 0; i < spec.devices.size(); ++i) {
        const auto& d = spec.devices[i];
        const std::string where =
            d.name.empty() ? "devices[" + std::to_string(i) + "]" : "device " + q(d.name);
        if (auto e = check_device_name(d.name); !e.empty()) c.add(where, e);
        if (!d.name.empty() && !seen.insert(d.name).second) c.add(where, "duplicate device name");
        for (const auto& [k, v] : d.annotations)
            if (k.empty()) c.add(where, "empty annotation key");
        if (d.edits.empty()) c.add(where, "no container edits");
        c.edits(where, d.edits);
    }
    c.edits("containerEdits", spec.edits);
    return out;
}

bool is_qualified_name(std::string_view text) noexcept {
    auto eq = text.find('=');
    auto slash = text.find('/');
    return !text.empty() && text.front() != '/' && eq != std::string_view::npos &&
           slash != std::string_view::npos && slash < eq;
}

Result<QualifiedName> parse_qualified_name(std::string_view text) {
    auto bad = [&](const std::string& why) {
        return fail(Errc::InvalidInput, "bad CDI device name " + q(text) + ": " + why);
    };
    if (!is_qualified_name(text)) return bad("want vendor/class=name");
    const auto eq = text.find('=');
    const auto slash = text.find('/');
    QualifiedName n{std::string(text.substr(0, slash)),
                    std::string(text.substr(slash + 1, eq - slash - 1)),
                    std::string(text.substr(eq + 1))};
    if (auto e = check_vendor(n.vendor); !e.empty()) return bad(e);
    if (auto e = check_class(n.cls); !e.empty()) return bad(e);
    if (auto e = check_device_name(n.name); !e.empty()) return bad(e);
    return n;
}

}  // namespace inject::cdi
