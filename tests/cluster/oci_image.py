#!/usr/bin/env python3
"""oci_image.py OUT --name NAME [--name NAME...] [--entrypoint JSON] [--cmd JSON] [--user UID] [--file SRC:DEST...]

Writes OUT, an OCI image layout as a tar (oci-layout, index.json, blobs) holding one image
whose single layer is a static busybox with its applet links, for `ctr images import`. Every
--name becomes an index entry (annotations io.containerd.image.name and
org.opencontainers.image.ref.name), so one import creates all the names. Byte-for-byte
reproducible: no timestamps, root-owned entries, sorted applets. --file adds a host file at DEST
(relative to /, mode kept): a stand-in for an upstream image, e.g. NPD's binary. --user sets
the image's user (a numeric one passes a pod's runAsNonRoot).
"""
import argparse
import hashlib
import io
import json
import os
import subprocess
import tarfile

ROOT_DIRS = {"bin": 0o755, "sbin": 0o755, "usr": 0o755, "usr/bin": 0o755, "usr/sbin": 0o755,
             "etc": 0o755, "tmp": 0o1777, "root": 0o700, "home": 0o755, "var": 0o755,
             "proc": 0o555, "sys": 0o555, "dev": 0o755, "run": 0o755}
FILES = {"etc/passwd": "root:x:0:0:root:/root:/bin/sh\nnobody:x:65534:65534:nobody:/nonexistent:/bin/false\n",
         "etc/group": "root:x:0:\nnogroup:x:65534:\n"}


def entry(name, kind=tarfile.REGTYPE, mode=0o644, size=0, link=""):
    t = tarfile.TarInfo(name)
    t.type, t.mode, t.size, t.linkname = kind, mode, size, link
    t.mtime, t.uid, t.gid, t.uname, t.gname = 0, 0, 0, "root", "root"
    return t


def layer(busybox, files=()):
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w", format=tarfile.GNU_FORMAT) as tar:
        for d, mode in ROOT_DIRS.items():
            tar.addfile(entry(d, tarfile.DIRTYPE, mode))
        data = open(busybox, "rb").read()
        tar.addfile(entry("bin/busybox", mode=0o755, size=len(data)), io.BytesIO(data))
        applets = subprocess.run([busybox, "--list-full"], check=True, capture_output=True,
                                 text=True).stdout.split()
        for a in sorted(set(applets)):
            if a != "bin/busybox" and os.path.dirname(a) in ROOT_DIRS:
                tar.addfile(entry(a, tarfile.SYMTYPE, 0o777, link="/bin/busybox"))
        for f, text in FILES.items():
            raw = text.encode()
            tar.addfile(entry(f, size=len(raw)), io.BytesIO(raw))
        for spec in files:
            src, dest = spec.split(":", 1)
            data = open(src, "rb").read()
            tar.addfile(entry(dest.lstrip("/"), mode=os.stat(src).st_mode & 0o7777, size=len(data)), io.BytesIO(data))
    return buf.getvalue()


def main():
    p = argparse.ArgumentParser()
    p.add_argument("out")
    p.add_argument("--name", action="append", required=True)
    p.add_argument("--busybox", default="/bin/busybox")
    p.add_argument("--entrypoint", type=json.loads)
    p.add_argument("--cmd", type=json.loads, default=["sh"])
    p.add_argument("--file", action="append", default=[])
    p.add_argument("--user")
    a = p.parse_args()

    blobs = {}

    def blob(data, media):
        digest = "sha256:" + hashlib.sha256(data).hexdigest()
        blobs[digest] = data
        return {"mediaType": media, "digest": digest, "size": len(data)}

    lay = layer(a.busybox, a.file)
    config = {"architecture": "amd64", "os": "linux",
              "config": {"Env": ["PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"],
                         "Cmd": a.cmd, "WorkingDir": "/"},
              "rootfs": {"type": "layers", "diff_ids": ["sha256:" + hashlib.sha256(lay).hexdigest()]}}
    if a.entrypoint:
        config["config"]["Entrypoint"] = a.entrypoint
    if a.user:
        config["config"]["User"] = a.user
    manifest = {"schemaVersion": 2, "mediaType": "application/vnd.oci.image.manifest.v1+json",
                "config": blob(json.dumps(config, sort_keys=True).encode(),
                               "application/vnd.oci.image.config.v1+json"),
                "layers": [blob(lay, "application/vnd.oci.image.layer.v1.tar")]}
    mdesc = blob(json.dumps(manifest, sort_keys=True).encode(), manifest["mediaType"])
    index = {"schemaVersion": 2, "mediaType": "application/vnd.oci.image.index.v1+json",
             "manifests": [dict(mdesc, platform={"architecture": "amd64", "os": "linux"},
                                annotations={"io.containerd.image.name": n,
                                             "org.opencontainers.image.ref.name": n})
                           for n in a.name]}
    files = {"oci-layout": json.dumps({"imageLayoutVersion": "1.0.0"}).encode(),
             "index.json": json.dumps(index, sort_keys=True).encode()}
    for d, data in blobs.items():
        files["blobs/sha256/" + d.split(":", 1)[1]] = data
    tmp = a.out + ".tmp"
    with tarfile.open(tmp, "w", format=tarfile.GNU_FORMAT) as tar:
        for d in ("blobs", "blobs/sha256"):
            tar.addfile(entry(d, tarfile.DIRTYPE, 0o755))
        for name, data in files.items():
            tar.addfile(entry(name, size=len(data)), io.BytesIO(data))
    os.replace(tmp, a.out)


if __name__ == "__main__":
    main()
