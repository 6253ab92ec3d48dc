// SPDX-License-Identifier: Apache-2.0
// A reader for the block-YAML subset CDI specs are written in (ours, nvidia-ctk's, most
// hand-written ones). yaml-cpp reads a 9 KiB spec in about 3 ms; the runtime shim reads the
// spec dirs on every container start in cdi mode, with a budget under 1 ms. This reader gives
// the same tree as yaml-cpp for what it accepts and declines (nullopt) everything else, so
// correctness and error messages stay with yaml-cpp. tests/unit/cdi_io_test.cpp compares both
// readers on a corpus.
#include <algorithm>
#include <cstdint>

#include "tree.hpp"

namespace inject::cdi::detail {
namespace {

struct Line {
    int no = 0;             // 1-based
    int indent = 0;         // column of the content
    std::string_view text;  // content, from the indent to the end of the line
};

bool is_seq_item(std::string_view t) {
    return t == "-" || t.starts_with("- ");
}

std::string_view trim_right(std::string_view s) {
    while (!s.empty() && s.back() == ' ') s.remove_suffix(1);
    return s;
}
std::string_view trim_left(std::string_view s) {
    while (!s.empty() && s.front() == ' ') s.remove_prefix(1);
    return s;
}

// Only spaces and an optional comment may follow a quoted scalar or a flow empty.
bool only_comment(std::string_view rest) {
    rest = trim_left(rest);
    return rest.empty() || rest.front() == '#';
}

void append_utf8(std::string& out, std::uint32_t cp) {
    if (cp < 0x80) {
        out += static_cast<char>(cp);
    } else if (cp < 0x800) {
        out += static_cast<char>(0xC0 | (cp >> 6));
        out += static_cast<char>(0x80 | (cp & 0x3F));
    } else {
        out += static_cast<char>(0xE0 | (cp >> 12));
        out += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
        out += static_cast<char>(0x80 | (cp & 0x3F));
    }
}

// A one-line quoted scalar at the start of `t`: its value, and what follows the closing quote.
std::optional<std::pair<std::string, std::string_view>> quoted(std::string_view t) {
    const char q = t.front();
    std::string out;
    for (std::size_t i = 1; i < t.size(); ++i) {
        const char c = t[i];
        if (q == '\'') {
            if (c != '\'') {
                out += c;
                continue;
            }
            if (i + 1 < t.size() && t[i + 1] == '\'') {
                out += '\'';
                ++i;
                continue;
            }
            return std::make_pair(std::move(out), t.substr(i + 1));
        }
        if (c == '"') return std::make_pair(std::move(out), t.substr(i + 1));
        if (c != '\\') {
            out += c;
            continue;
        }
        if (++i >= t.size()) return std::nullopt;
        switch (t[i]) {
            case '"':
                out += '"';
                break;
            case '\\':
                out += '\\';
                break;
            case '/':
                out += '/';
                break;
            case 'b':
                out += '\b';
                break;
            case 'f':
                out += '\f';
                break;
            case 'n':
                out += '\n';
                break;
            case 'r':
                out += '\r';
                break;
            case 't':
                out += '\t';
                break;
            case 'u': {
                if (i + 4 >= t.size()) return std::nullopt;
                std::uint32_t cp = 0;
                for (int k = 1; k <= 4; ++k) {
                    const char h = t[i + static_cast<std::size_t>(k)];
                    cp <<= 4;
                    if (h >= '0' && h <= '9')
                        cp |= static_cast<std::uint32_t>(h - '0');
                    else if (h >= 'a' && h <= 'f')
                        cp |= static_cast<std::uint32_t>(h - 'a' + 10);
                    else if (h >= 'A' && h <= 'F')
                        cp |= static_cast<std::uint32_t>(h - 'A' + 10);
                    else
                        return std::nullopt;
                }
                if (cp >= 0xD800 && cp <= 0xDFFF)
                    return std::nullopt;  // surrogates: leave to yaml-cpp
                append_utf8(out, cp);
                i += 4;
                break;
            }
            default:
                return std::nullopt;
        }
    }
    return std::nullopt;  // not closed on this line
}

// A plain scalar we are sure yaml-cpp reads the same way: no indicator first, no ": ", no
// trailing ':'. The comment (" #...") is already cut off.
bool plain_ok(std::string_view t) {
    if (t.empty()) return false;
    if (std::string_view("[]{},#&*!|>'\"%@`").find(t.front()) != std::string_view::npos)
        return false;
    if ((t.front() == '-' || t.front() == '?' || t.front() == ':') &&
        (t.size() == 1 || t[1] == ' '))
        return false;
    return t.find(": ") == std::string_view::npos && t.back() != ':';
}

std::optional<Node> scalar(std::string_view t, int line) {
    Node n;
    n.line = line;
    if (t.front() == '"' || t.front() == '\'') {
        auto q = quoted(t);
        if (!q || !only_comment(q->second)) return std::nullopt;
        n.kind = Node::Kind::String;
        n.text = std::move(q->first);
        return n;
    }
    if ((t.starts_with("{}") || t.starts_with("[]")) && only_comment(t.substr(2))) {
        n.kind = t.front() == '{' ? Node::Kind::Map : Node::Kind::Seq;
        return n;
    }
    if (auto c = t.find(" #"); c != std::string_view::npos) t = t.substr(0, c);
    t = trim_right(t);
    if (!plain_ok(t)) return std::nullopt;
    n.text = std::string(t);
    n.kind = resolve_plain(n.text);
    if (n.kind == Node::Kind::Null) n.text.clear();
    return n;
}

struct Entry {
    std::string key;
    std::string_view rest;  // the value text, "" when the value is on the next lines
};

// "key: value", "key:", "\"key\": value"; nullopt when `t` is not a mapping entry.
std::optional<Entry> split_entry(std::string_view t) {
    Entry e;
    std::string_view after;
    if (t.front() == '"' || t.front() == '\'') {
        auto q = quoted(t);
        if (!q) return std::nullopt;
        after = trim_left(q->second);
        if (after.empty() || after.front() != ':' || (after.size() > 1 && after[1] != ' '))
            return std::nullopt;
        e.key = std::move(q->first);
        after.remove_prefix(1);
    } else {
        std::size_t p = t.find(": ");
        if (p == std::string_view::npos) {
            if (t.back() != ':') return std::nullopt;
            p = t.size() - 1;
        }
        const auto key = trim_right(t.substr(0, p));
        if (!plain_ok(key) || key.find(" #") != std::string_view::npos) return std::nullopt;
        // A null key ("null", "~", "NULL") is no scalar to yaml-cpp: leave it to its error.
        if (resolve_plain(key) == Node::Kind::Null) return std::nullopt;
        e.key = std::string(key);
        after = t.substr(p + 1);
    }
    after = trim_left(after);
    if (!after.empty() && after.front() == '#') after = {};
    e.rest = after;
    return e;
}

class Reader {
public:
    Reader(std::vector<Line> lines, int eof_line) : lines_(std::move(lines)), eof_line_(eof_line) {}

    std::optional<Node> document() {
        if (lines_.empty() || lines_[0].indent != 0) return std::nullopt;
        auto n = node(0);
        if (!n || pos_ != lines_.size()) return std::nullopt;
        return n;
    }

private:
    bool at(int indent) const { return pos_ < lines_.size() && lines_[pos_].indent == indent; }

    std::optional<Node> node(int indent) {
        // Deeper than any CDI spec: let yaml-cpp (with its own limit) and the decoder refuse it.
        if (++depth_ > 64) return std::nullopt;
        auto n = is_seq_item(lines_[pos_].text) ? seq(indent) : map(indent);
        --depth_;
        return n;
    }

    // The value of an entry or item whose text on its own line was empty.
    std::optional<Node> nested(int indent, bool seq_at_same_indent) {
        if (pos_ < lines_.size() && lines_[pos_].indent > indent) return node(lines_[pos_].indent);
        if (seq_at_same_indent && at(indent) && is_seq_item(lines_[pos_].text)) return seq(indent);
        // An implicit null: yaml-cpp marks it where the next token starts.
        Node n;
        n.line = pos_ < lines_.size() ? lines_[pos_].no : eof_line_;
        return n;
    }

    std::optional<Node> seq(int indent) {
        Node s;
        s.kind = Node::Kind::Seq;
        s.line = lines_[pos_].no;
        while (at(indent) && is_seq_item(lines_[pos_].text)) {
            Line& l = lines_[pos_];
            std::string_view rest = l.text.substr(1);
            const auto skipped = rest.size() - trim_left(rest).size();
            rest = trim_left(rest);
            std::optional<Node> item;
            if (rest.empty() || rest.front() == '#') {
                ++pos_;
                item = nested(indent, false);
            } else if (is_seq_item(rest) || (pending_ = split_entry(rest))) {
                // "- key: v" / "- - x": the item is a block starting at this column (map() takes
                // the entry split here instead of splitting the line again)
                l.indent = indent + 1 + static_cast<int>(skipped);
                l.text = rest;
                item = node(l.indent);
            } else {
                item = scalar(rest, l.no);
                ++pos_;
            }
            if (!item) return std::nullopt;
            s.items.push_back(std::move(*item));
        }
        return s;
    }

    std::optional<Node> map(int indent) {
        Node m;
        m.kind = Node::Kind::Map;
        m.line = lines_[pos_].no;
        while (at(indent) && !is_seq_item(lines_[pos_].text)) {
            const Line& l = lines_[pos_];
            const int no = l.no;
            std::optional<Entry> e = pending_ ? std::move(pending_) : split_entry(l.text);
            pending_.reset();
            if (!e) return std::nullopt;
            if (std::any_of(m.fields.begin(), m.fields.end(),
                            [&](const auto& f) { return f.first == e->key; }))
                return std::nullopt;  // yaml-cpp's path reports the duplicate
            ++pos_;
            std::optional<Node> v = e->rest.empty() ? nested(indent, true) : scalar(e->rest, no);
            if (!v) return std::nullopt;
            m.fields.emplace_back(std::move(e->key), std::move(*v));
        }
        return m;
    }

    std::vector<Line> lines_;
    int eof_line_;  // the line where the end of the text is
    std::size_t pos_ = 0;
    int depth_ = 0;
    std::optional<Entry> pending_;  // the entry seq() split from the line at pos_, for map()
};

}  // namespace

std::optional<Node> parse_simple_yaml(std::string_view all) {
    // Control characters and non-ASCII bytes (YAML's printable-character rules, BOMs, UTF-8
    // validation) are yaml-cpp's business: the fuzzer found inputs with NUL and a stray 0x87
    // where the two readers disagreed.
    // This also refuses tabs and CRs (indentation and line ends yaml-cpp reads its own way),
    // so the line loop below need not look for them.
    int newlines = 0;
    for (char c : all) {
        const auto u = static_cast<unsigned char>(c);
        if (c == '\n')
            ++newlines;
        else if (u < 0x20 || u >= 0x7f)
            return std::nullopt;
    }
    std::string_view text = all;
    std::vector<Line> lines;
    lines.reserve(static_cast<std::size_t>(newlines) + 1);
    int no = 0;
    bool content = false;
    while (!text.empty()) {
        auto nl = text.find('\n');
        std::string_view raw = text.substr(0, nl);
        text = nl == std::string_view::npos ? std::string_view() : text.substr(nl + 1);
        ++no;
        const auto body = trim_left(raw);
        if (body.empty() || body.front() == '#') continue;
        if (!content && body == "---" && body.size() == raw.size()) continue;
        if (body.starts_with("---") || body.starts_with("...") || body.front() == '%')
            return std::nullopt;
        content = true;
        lines.push_back(Line{no, static_cast<int>(raw.size() - body.size()), trim_right(body)});
    }
    return Reader(std::move(lines), newlines + 1).document();
}

}  // namespace inject::cdi::detail
