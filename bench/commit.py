#!/usr/bin/env python3
"""What committing a staged write path costs (`sandboy wrap` as root): a
step writes FILES small files (1 KiB each, in 100 directories) into a host
write path; the same step runs committed and with --dry-run (staged, then
discarded) in one interleaved round, and the commit's cost is the median of
the paired differences. For scale, the same step also runs unconfined on
the host ("direct": creating the files on this disk without sandboy). A
fresh host directory each run, removed after.

Usage: commit.py SANDBOY_BIN [N [FILES]]
"""
import os
import random
import shutil
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(__file__))
from bench import finish, med, timed  # noqa: E402

STEP = r"""
import os, sys
out, n = sys.argv[1], int(sys.argv[2])
data = b"x" * 1024
for d in range(100):
    os.mkdir(f"{out}/d{d}")
for i in range(n):
    with open(f"{out}/d{i % 100}/f{i}", "wb") as f:
        f.write(data)
"""


def main():
    sandboy = sys.argv[1]
    n = int(sys.argv[2]) if len(sys.argv) > 2 else 5
    files = int(sys.argv[3]) if len(sys.argv) > 3 else 10000
    work = tempfile.mkdtemp(prefix="bench-commit-")
    os.chmod(work, 0o755)
    root = tempfile.mkdtemp(prefix="bench-commit-root-")
    policy = os.path.join(work, "p.toml")
    samples = {"commit": [], "dry-run": [], "direct": []}
    failures = {}
    for i in range(n):
        order = list(samples)
        random.shuffle(order)
        for mode in order:
            out = os.path.join(work, f"out-{i}-{mode}")
            os.mkdir(out)
            with open(policy, "w") as p:
                p.write('version = 1\n[fs]\nread = ["/usr", "/lib", "/lib64", "/etc"]\n'
                        'exec = ["/usr/bin", "/usr/lib", "/lib", "/lib64"]\n'
                        f'write = ["{out}"]\n[process]\nuser = "0:0"\n')
            argv = [sandboy, "--root", root, "wrap", "--policy", policy]
            if mode == "dry-run":
                argv.append("--dry-run")
            argv += ["--", "/usr/bin/python3", "-c", STEP, out, str(files)]
            if mode == "direct":
                argv = argv[argv.index("--") + 1:]
            ms, code, err = timed(argv)
            committed = sum(len(fs) for _, _, fs in os.walk(out))
            want = 0 if mode == "dry-run" else files
            if code != 0 or committed != want:
                failures[mode] = f"exit {code}, {committed} files on the host: {err[-300:]}"
            else:
                samples[mode].append(ms)
            shutil.rmtree(out, ignore_errors=True)
    c, d = samples["commit"], samples["dry-run"]
    print(f"wrap of a step writing {files} files (1 KiB each, 100 dirs), median of {n}:"
          f" committed {med(c):.0f} ms, --dry-run (discarded) {med(d):.0f} ms")
    print(f"commit of {files} staged files (median of paired differences):"
          f" {med([x - y for x, y in zip(c, d)]):.0f} ms;"
          f" the step writing them straight to this disk, unconfined: {med(samples['direct']):.0f} ms")
    shutil.rmtree(work, ignore_errors=True)
    finish(failures, {"sandboy": root})


if __name__ == "__main__":
    main()
