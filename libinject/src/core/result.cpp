// SPDX-License-Identifier: Apache-2.0
#include "inject/result.hpp"

#include <cstring>

namespace inject {

std::string_view errc_name(Errc code) noexcept {
    switch (code) {
        case Errc::NotFound:
            return "not found";
        case Errc::InvalidInput:
            return "invalid input";
        case Errc::Unsupported:
            return "unsupported";
        case Errc::Permission:
            return "permission denied";
        case Errc::Conflict:
            return "conflict";
        case Errc::Io:
            return "i/o error";
        case Errc::Internal:
            return "internal error";
        case Errc::Expired:
            return "expired";
    }
    return "unknown error";
}

std::string Error::what() const {
    std::string out;
    for (auto it = context_.rbegin(); it != context_.rend(); ++it) {
        out += *it;
        out += ": ";
    }
    out += message_;
    return out;
}

Error sys_error(std::string what, int err) {
    Errc code = Errc::Io;
    if (err == ENOENT || err == ENOTDIR)
        code = Errc::NotFound;
    else if (err == EPERM || err == EACCES || err == EROFS)
        code = Errc::Permission;
    else if (err == EINVAL)
        code = Errc::InvalidInput;
    else if (err == ENOSYS || err == EOPNOTSUPP)
        code = Errc::Unsupported;
    what += ": ";
    what += std::strerror(err);
    return Error(code, std::move(what), err);
}

}  // namespace inject
