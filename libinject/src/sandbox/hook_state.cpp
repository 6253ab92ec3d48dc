// SPDX-License-Identifier: Apache-2.0
// The OCI state on a hook's stdin and the bundle's config.json. nlohmann/json exceptions end in
// parse_json() below and become InvalidInput with the byte offset.
#include <sys/stat.h>
#include <unistd.h>

#include <nlohmann/json.hpp>

#include "inject/fs.hpp"
#include "inject/hook.hpp"
#include "inject/oci.hpp"

namespace inject::hook {
namespace {

using nlohmann::json;

Result<json> parse_json(std::string_view text, const std::string& what) {
    try {
        return json::parse(text.begin(), text.end());
    } catch (const json::parse_error& e) {
        std::string why = e.what();
        // "[json.exception.parse_error.101] parse error at line 1, column 2: syntax error ..."
        if (auto p = why.find("] "); p != std::string::npos) why = why.substr(p + 2);
        if (auto p = why.find(": "); why.rfind("parse error", 0) == 0 && p != std::string::npos)
            why = why.substr(p + 2);
        return fail(Errc::InvalidInput,
                    what + ": not valid JSON at byte " + std::to_string(e.byte) + ": " + why);
    } catch (const json::exception& e) {
        return fail(Errc::InvalidInput, what + ": " + e.what());
    }
}

const json* member(const json& j, const char* key) {
    if (!j.is_object()) return nullptr;
    auto it = j.find(key);
    return it == j.end() ? nullptr : &*it;
}

std::optional<std::int64_t> opt_int(const json& j, const char* key) {
    const json* v = member(j, key);
    if (v == nullptr || !v->is_number_integer()) return std::nullopt;
    return v->get<std::int64_t>();
}

}  // namespace

Result<State> parse_state(std::string_view text, bool need_pid) {
    const std::string what = "container state on stdin";
    if (text.find_first_not_of(" \t\r\n") == std::string_view::npos)
        return fail(Errc::InvalidInput, what + ": empty");
    INJECT_TRY(json j, parse_json(text, what));
    if (!j.is_object()) return fail(Errc::InvalidInput, what + ": not a JSON object");
    State st;
    if (const json* v = member(j, "id"); v && v->is_string()) st.id = v->get<std::string>();
    if (const json* v = member(j, "status"); v && v->is_string()) st.status = v->get<std::string>();
    const json* b = member(j, "bundle");
    if (b == nullptr || !b->is_string() || b->get<std::string>().empty())
        return fail(Errc::InvalidInput, what + ": no \"bundle\"");
    st.bundle = b->get<std::string>();
    if (st.bundle.front() != '/')
        return fail(Errc::InvalidInput,
                    what + ": bundle '" + st.bundle + "' is not an absolute path");
    if (const json* p = member(j, "pid"); p && p->is_number_integer()) {
        auto v = p->get<std::int64_t>();
        if (v > 0 && v <= 0x3fffffff) st.pid = static_cast<int>(v);
    }
    if (need_pid && st.pid <= 0)
        return fail(Errc::InvalidInput, what + ": no container pid (status '" + st.status + "')");
    return st;
}

Result<Bundle> load_bundle(const std::string& bundle_dir) {
    const std::string path = fs::join(bundle_dir, "/config.json");
    INJECT_TRY(std::string text, fs::read_file(path, 16U << 20));
    INJECT_TRY(json j, parse_json(text, path));
    Bundle b;
    b.path = bundle_dir;
    const json* root = member(j, "root");
    const json* rp = root ? member(*root, "path") : nullptr;
    if (rp == nullptr || !rp->is_string() || rp->get<std::string>().empty())
        return fail(Errc::InvalidInput, path + ": no root.path");
    std::string r = rp->get<std::string>();
    b.rootfs = r.front() == '/' ? r : fs::join(bundle_dir, "/" + r);
    struct stat st {};
    if (::stat(b.rootfs.c_str(), &st) != 0) return fail(sys_error("rootfs " + b.rootfs));
    if (!S_ISDIR(st.st_mode))
        return fail(Errc::InvalidInput, "rootfs " + b.rootfs + " is not a folder");
    if (const json* proc = member(j, "process")) {
        if (const json* env = member(*proc, "env"); env && env->is_array())
            for (const auto& e : *env)
                if (e.is_string()) b.env.push_back(e.get<std::string>());
    }
    b.privileged = oci::privileged(j);
    if (const json* ann = member(j, "annotations"); ann && ann->is_object())
        for (const auto& [k, v] : ann->items())
            if (v.is_string()) b.annotations[k] = v.get<std::string>();
    const json* linux_ = member(j, "linux");
    const json* res = linux_ ? member(*linux_, "resources") : nullptr;
    const json* devs = res ? member(*res, "devices") : nullptr;
    if (devs && devs->is_array()) {
        for (const auto& d : *devs) {
            DeviceRule rule;
            if (const json* a = member(d, "allow"); a && a->is_boolean())
                rule.allow = a->get<bool>();
            if (const json* t = member(d, "type");
                t && t->is_string() && !t->get<std::string>().empty())
                rule.type = t->get<std::string>()[0];
            rule.major = opt_int(d, "major");
            rule.minor = opt_int(d, "minor");
            if (const json* acc = member(d, "access"); acc && acc->is_string())
                rule.access = acc->get<std::string>();
            else
                rule.access = "rwm";
            b.device_rules.push_back(rule);
        }
    }
    return b;
}

bool rules_allow(const std::vector<DeviceRule>& rules, char type, std::int64_t major,
                 std::int64_t minor) {
    bool r = false, w = false;
    for (const auto& rule : rules) {
        if (rule.type != 'a' && rule.type != type) continue;
        if (rule.major && *rule.major != major) continue;
        if (rule.minor && *rule.minor != minor) continue;
        if (rule.access.find('r') != std::string::npos) r = rule.allow;
        if (rule.access.find('w') != std::string::npos) w = rule.allow;
    }
    return r && w;
}

Result<std::string> read_state(int fd) {
    constexpr std::size_t kMaxState = 1U << 20;
    std::string out;
    char buf[8192];
    for (;;) {
        ssize_t n = ::read(fd, buf, sizeof buf);
        if (n < 0 && errno == EINTR) continue;
        if (n < 0) return fail(sys_error("reading the container state from stdin"));
        if (n == 0) break;
        out.append(buf, static_cast<std::size_t>(n));
        if (out.size() > kMaxState)
            return fail(Errc::InvalidInput, "container state on stdin: larger than 1 MiB");
    }
    return out;
}

}  // namespace inject::hook
