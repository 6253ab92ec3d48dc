#!/usr/bin/env python3
"""Lists pipelines in `set -o pipefail` shell scripts whose last reader may quit before the
writer is done (`| head`, `| grep -q`, `| grep -m N`, `| sed Nq`, an awk that exits): the writer
then dies of SIGPIPE, the pipeline's status is 141, and `set -e` ends a script that worked
(`make demo-cluster` ended as "Error 141" that way). Prints FILE:LINE: PIPELINE for each and
exits 1 when there is one. Usage: early_readers.py FILE..."""
import re
import sys

EARLY = re.compile(r"\|\s*(head\b|grep\s+-[a-zA-Z]*[qm]|sed\s+(-n\s+)?['\"]?\d*q|awk\b[^|]*\bexit\b)")


def pipelines(text):
    """(line number, logical line) with continuation lines joined."""
    lines = text.split("\n")
    i = 0
    while i < len(lines):
        start, line = i, lines[i]
        while line.rstrip().endswith(("|", "\\")) and i + 1 < len(lines):
            i += 1
            line = line.rstrip().rstrip("\\") + " " + lines[i].strip()
        yield start + 1, line
        i += 1


def main(paths):
    found = []
    for path in paths:
        try:
            text = open(path, errors="replace").read()
        except OSError as e:
            print(f"{path}: {e.strerror}", file=sys.stderr)
            return 2
        if not re.search(r"set -[a-zA-Z]*o pipefail|set -o pipefail", text):
            continue
        for n, line in pipelines(text):
            code = line.strip()
            if code.startswith("#"):
                continue
            code = re.sub(r"\s#\s.*$", "", code)
            if EARLY.search(code):
                found.append(f"{path}:{n}: {code[:160]}")
    print("\n".join(found)) if found else None
    return 1 if found else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
