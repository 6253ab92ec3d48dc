// SPDX-License-Identifier: Apache-2.0
#pragma once

/// \file
/// `inject::Error` and `inject::Result<T>`: every fallible library call returns a Result.
/// Result is shaped like C++23 `std::expected<T, Error>` so moving to it is a rename.

#include <cerrno>
#include <string>
#include <string_view>
#include <utility>
#include <variant>
#include <vector>

namespace inject {

/// What kind of failure this is. Callers branch on the code, never on the message text.
enum class Errc {
    NotFound,      ///< a file, device, binary or name that should exist does not
    InvalidInput,  ///< malformed input: config, spec, request, efsmi output, argv
    Unsupported,   ///< the host or the input asks for something we do not do
    Permission,    ///< EPERM/EACCES or a policy refusal
    Conflict,      ///< two sources disagree (duplicate CDI device, ...)
    Io,            ///< a system call failed for another reason
    Internal,      ///< a broken invariant: a bug in this project
    Expired,       ///< what was asked for is no longer kept (a watch's resourceVersion: 410)
};

/// The lowercase name of a code ("not found", "invalid input", ...).
[[nodiscard]] std::string_view errc_name(Errc code) noexcept;

/// An error: a code, the errno if a system call failed (0 otherwise), the message, and the
/// context layers added on the way up (innermost first).
class Error {
public:
    Error(Errc code, std::string message, int sys_errno = 0)
        : code_(code), errno_(sys_errno), message_(std::move(message)) {}

    [[nodiscard]] Errc code() const noexcept { return code_; }
    [[nodiscard]] int sys_errno() const noexcept { return errno_; }
    /// The innermost message, without context.
    [[nodiscard]] const std::string& message() const noexcept { return message_; }
    /// Context layers, innermost first.
    [[nodiscard]] const std::vector<std::string>& contexts() const noexcept { return context_; }

    /// Adds an outer layer of context: "what we were doing".
    Error& context(std::string what) & {
        context_.push_back(std::move(what));
        return *this;
    }
    Error&& context(std::string what) && {
        context_.push_back(std::move(what));
        return std::move(*this);
    }

    /// The whole chain, outermost first: "loading config /x: line 3: unknown key 'mdoe'".
    [[nodiscard]] std::string what() const;

private:
    Errc code_;
    int errno_;
    std::string message_;
    std::vector<std::string> context_;
};

/// Makes an Error whose message ends with ": <strerror(err)>".
[[nodiscard]] Error sys_error(std::string what, int err = errno);

/// The wrapper that makes an Error convertible to any Result<T> (like std::unexpected).
struct Unexpected {
    Error error;
};

/// Shorthand: `return inject::fail(Errc::NotFound, "no card " + name);`
[[nodiscard]] inline Unexpected fail(Errc code, std::string message, int sys_errno = 0) {
    return Unexpected{Error(code, std::move(message), sys_errno)};
}
[[nodiscard]] inline Unexpected fail(Error e) {
    return Unexpected{std::move(e)};
}

/// A value or an Error.
template <typename T>
class [[nodiscard]] Result {
public:
    Result(T value) : v_(std::in_place_index<0>, std::move(value)) {}  // NOLINT(implicit)
    // cppcheck-suppress passedByValue ; a sink: the error is moved out of `u`
    Result(Unexpected u) : v_(std::in_place_index<1>, std::move(u.error)) {}  // NOLINT
    Result(Error e) : v_(std::in_place_index<1>, std::move(e)) {}             // NOLINT

    [[nodiscard]] bool has_value() const noexcept { return v_.index() == 0; }
    explicit operator bool() const noexcept { return has_value(); }

    T& value() & { return std::get<0>(v_); }
    const T& value() const& { return std::get<0>(v_); }
    T&& value() && { return std::get<0>(std::move(v_)); }
    T& operator*() & { return value(); }
    const T& operator*() const& { return value(); }
    T&& operator*() && { return std::move(*this).value(); }
    T* operator->() { return &value(); }
    const T* operator->() const { return &value(); }

    Error& error() & { return std::get<1>(v_); }
    const Error& error() const& { return std::get<1>(v_); }
    Error&& error() && { return std::get<1>(std::move(v_)); }

    template <typename U>
    T value_or(U&& fallback) const& {
        return has_value() ? value() : static_cast<T>(std::forward<U>(fallback));
    }

private:
    std::variant<T, Error> v_;
};

/// Result of a call that returns nothing on success.
template <>
class [[nodiscard]] Result<void> {
public:
    Result() = default;
    // cppcheck-suppress passedByValue ; a sink: the error is moved out of `u`
    Result(Unexpected u) : err_(std::move(u.error)), ok_(false) {}  // NOLINT
    Result(Error e) : err_(std::move(e)), ok_(false) {}             // NOLINT

    [[nodiscard]] bool has_value() const noexcept { return ok_; }
    explicit operator bool() const noexcept { return ok_; }
    void value() const {}

    Error& error() & { return err_; }
    const Error& error() const& { return err_; }
    Error&& error() && { return std::move(err_); }

private:
    Error err_{Errc::Internal, ""};
    bool ok_ = true;
};

/// An ok Result<void>.
[[nodiscard]] inline Result<void> ok() {
    return {};
}

}  // namespace inject

/// Evaluates a Result expression; on error returns it from the enclosing function.
#define INJECT_TRY_VOID(expr)                                                        \
    do {                                                                             \
        auto inject_try_r_ = (expr);                                                 \
        if (!inject_try_r_) return ::inject::fail(std::move(inject_try_r_).error()); \
    } while (0)

#define INJECT_CONCAT_INNER_(a, b) a##b
#define INJECT_CONCAT_(a, b) INJECT_CONCAT_INNER_(a, b)

/// `INJECT_TRY(auto x, expr);` binds the value of a Result or returns its error.
// `decl` is a declaration and `tmp` a name: parentheses around them would not compile.
// NOLINTBEGIN(bugprone-macro-parentheses)
#define INJECT_TRY(decl, expr) INJECT_TRY_IMPL_(decl, expr, INJECT_CONCAT_(inject_try_, __LINE__))
#define INJECT_TRY_IMPL_(decl, expr, tmp)                    \
    auto tmp = (expr);                                       \
    if (!tmp) return ::inject::fail(std::move(tmp).error()); \
    decl = std::move(tmp).value()
// NOLINTEND(bugprone-macro-parentheses)

/// Like INJECT_TRY_VOID, adding a context layer to the error on the way up.
#define INJECT_TRY_CTX(expr, ctx)                                                                 \
    do {                                                                                          \
        auto inject_try_r_ = (expr);                                                              \
        if (!inject_try_r_) return ::inject::fail(std::move(inject_try_r_).error().context(ctx)); \
    } while (0)
