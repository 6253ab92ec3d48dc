#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""epp-proto-compare.py [--newer NAME]... OURS.pb GO-FILE...

Compares enflame-epp's protos (OURS.pb, a FileDescriptorSet written by protoc
--descriptor_set_out) with upstream's, read from the serialized FileDescriptorProto that
protoc-gen-go embeds in each generated Go file (the ..._rawDesc byte array or string).
For every message, field, enum value and service method of ours: the same name, number, type,
label, type name and oneof upstream; every field or value upstream has in a message or enum of
ours must be in ours too. --newer names a message, field or enum value of ours that upstream's copy may
predate: it is allowed to be missing there (by name and number), never to differ.
Prints one line per difference and a summary; exits 1 on any difference.
"""
import argparse
import re
import sys

from google.protobuf import descriptor_pb2

FIELD = descriptor_pb2.FieldDescriptorProto
ESCAPES = {"a": 7, "b": 8, "f": 12, "n": 10, "r": 13, "t": 9, "v": 11, "\\": 92, '"': 34, "'": 39}


def go_string_bytes(literal):
    """The bytes of one Go interpreted string literal (without its quotes)."""
    out, i = bytearray(), 0
    while i < len(literal):
        c = literal[i]
        if c != "\\":
            out += c.encode()
            i += 1
            continue
        e = literal[i + 1]
        if e in ESCAPES:
            out.append(ESCAPES[e])
            i += 2
        elif e == "x":
            out.append(int(literal[i + 2:i + 4], 16))
            i += 4
        elif e in "01234567":
            out.append(int(literal[i + 1:i + 4], 8))
            i += 4
        elif e in "uU":
            n = 4 if e == "u" else 8
            out += chr(int(literal[i + 2:i + 2 + n], 16)).encode()
            i += 2 + n
        else:
            raise ValueError(f"unknown escape \\{e}")
    return bytes(out)


def raw_desc(path):
    """The FileDescriptorProto embedded in a generated Go file."""
    text = open(path, encoding="utf-8").read()
    m = re.search(r"_rawDesc = \[\]byte\{(.*?)\n\}", text, re.S)
    if m:
        data = bytes(int(x, 16) for x in re.findall(r"0x([0-9a-fA-F]{2})", m.group(1)))
    else:
        m = re.search(r'_rawDesc = ((?:"(?:[^"\\\n]|\\.)*"\s*\+?\s*)+)', text)
        if not m:
            sys.exit(f"{path}: no _rawDesc found (not a protoc-gen-go file?)")
        parts = re.findall(r'"((?:[^"\\\n]|\\.)*)"', m.group(1))
        data = b"".join(go_string_bytes(p) for p in parts)
    fd = descriptor_pb2.FileDescriptorProto()
    fd.ParseFromString(data)
    return fd


def walk(fd):
    """Full name -> (kind, descriptor) for every message, enum and service of a file."""
    out = {}

    def messages(prefix, ms):
        for m in ms:
            name = f"{prefix}.{m.name}"
            out[name] = ("message", m)
            messages(name, m.nested_type)
            for e in m.enum_type:
                out[f"{name}.{e.name}"] = ("enum", e)

    messages(fd.package, fd.message_type)
    for e in fd.enum_type:
        out[f"{fd.package}.{e.name}"] = ("enum", e)
    for s in fd.service:
        out[f"{fd.package}.{s.name}"] = ("service", s)
    return out


def field_shape(m, f):
    oneof = m.oneof_decl[f.oneof_index].name if f.HasField("oneof_index") else ""
    return (f.name, f.number, FIELD.Type.Name(f.type), FIELD.Label.Name(f.label), f.type_name,
            oneof)


class Compare:
    def __init__(self, newer):
        self.newer, self.errors, self.counts = set(newer), [], {}
        self.newer_seen = []

    def count(self, kind):
        self.counts[kind] = self.counts.get(kind, 0) + 1

    def differ(self, what):
        self.errors.append(what)

    def message(self, name, ours, theirs):
        by_number = {f.number: f for f in theirs.field}
        for f in ours.field:
            full = f"{name}.{f.name}"
            t = by_number.get(f.number)
            if t is None:
                if full in self.newer and f.name not in {x.name for x in theirs.field}:
                    self.newer_seen.append(full)
                    continue
                self.differ(f"{full} = {f.number}: no field {f.number} upstream")
                continue
            a, b = field_shape(ours, f), field_shape(theirs, t)
            if a != b:
                self.differ(f"{full}: ours {a}, upstream {b}")
            else:
                self.count("fields")
        ours_numbers = {f.number for f in ours.field}
        for t in theirs.field:
            if t.number not in ours_numbers:
                self.differ(f"{name}.{t.name} = {t.number}: upstream has it, ours does not")

    def enum(self, name, ours, theirs):
        a = {(v.name, v.number) for v in ours.value}
        b = {(v.name, v.number) for v in theirs.value}
        upstream_names = {v[0] for v in b}
        for v in sorted(a - b, key=lambda x: x[1]):
            full = f"{name}.{v[0]}"
            if full in self.newer and v[0] not in upstream_names:
                self.newer_seen.append(full)
            else:
                self.differ(f"{full} = {v[1]}: not upstream")
        for v in sorted(b - a, key=lambda x: x[1]):
            self.differ(f"{name}.{v[0]} = {v[1]}: upstream has it, ours does not")
        self.counts["enum values"] = self.counts.get("enum values", 0) + len(a & b)

    def service(self, name, ours, theirs):
        shape = lambda m: (m.input_type, m.output_type, m.client_streaming, m.server_streaming)
        b = {m.name: shape(m) for m in theirs.method}
        for m in ours.method:
            if b.get(m.name) != shape(m):
                self.differ(f"{name}.{m.name}: ours {shape(m)}, upstream {b.get(m.name)}")
            else:
                self.count("methods")

    def file(self, ours, theirs):
        if ours.package != theirs.package:
            self.differ(f"{ours.name}: package {ours.package}, upstream {theirs.package}")
        upstream = walk(theirs)
        for name, (kind, d) in walk(ours).items():
            if name not in upstream:
                if name in self.newer:
                    self.newer_seen.append(name)
                else:
                    self.differ(f"{name}: no such {kind} upstream")
                continue
            ukind, u = upstream[name]
            if ukind != kind:
                self.differ(f"{name}: a {kind} here, a {ukind} upstream")
                continue
            self.count(kind + "s")
            getattr(self, kind)(name, d, u)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--newer", action="append", default=[])
    ap.add_argument("ours")
    ap.add_argument("go_files", nargs="+")
    a = ap.parse_args()
    ours = descriptor_pb2.FileDescriptorSet()
    with open(a.ours, "rb") as f:
        ours.ParseFromString(f.read())
    upstream = {fd.name: fd for fd in map(raw_desc, a.go_files)}
    c = Compare(a.newer)
    for fd in ours.file:
        if fd.name.startswith("google/protobuf/"):
            continue
        if fd.name not in upstream:
            c.differ(f"{fd.name}: no upstream file of that name among the Go files given")
            continue
        c.file(fd, upstream[fd.name])
    for e in c.errors:
        print(f"differs: {e}")
    summary = ", ".join(f"{n} {k}" for k, n in sorted(c.counts.items()))
    print(f"matched upstream: {summary}")
    if c.newer_seen:
        print(f"newer than upstream's copy: {', '.join(sorted(c.newer_seen))}")
    if c.errors:
        print(f"{len(c.errors)} difference(s)")
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
