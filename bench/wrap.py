#!/usr/bin/env python3
"""What `sandboy wrap -- /bin/true` costs an ordinary user (issue 15): as
nobody, the landlock tier and the namespaces tier against plain /bin/true
(also started through setpriv, so that exec is in every figure), and against
root wrap of the same command (a container), interleaved in random order
each round. The tier overheads are medians of paired per-round differences
from plain; the target is the landlock tier at most 2 ms above plain exec
(sandlock publishes 7 ms against 2 ms bare).

Usage: wrap.py SANDBOY_BIN [N]
"""
import os
import random
import shutil
import sys
import tempfile

sys.path.insert(0, os.path.dirname(__file__))
from bench import finish, med, timed_cpu  # noqa: E402

POLICY = """version = 1
[fs]
read = ["/usr", "/etc"]
exec = ["/usr/bin"]
[net]
namespace = "host"
"""


def main():
    sandboy = sys.argv[1]
    n = int(sys.argv[2]) if len(sys.argv) > 2 else 30
    if os.geteuid() != 0 or not shutil.which("setpriv"):
        print("wrap tiers: skipped (needs root to switch to nobody, and setpriv)")
        return
    work = tempfile.mkdtemp(prefix="bench-wrap-")
    os.chmod(work, 0o755)
    root = tempfile.mkdtemp(prefix="bench-wrap-root-")
    exe = os.path.join(work, "sandboy")
    shutil.copy(sandboy, exe)
    os.chmod(exe, 0o755)
    pol = os.path.join(work, "p.toml")
    with open(pol, "w") as f:
        f.write(POLICY)
    os.chmod(pol, 0o644)
    nobody = ["setpriv", "--reuid", "65534", "--regid", "65534", "--clear-groups"]
    true = shutil.which("true") or "/usr/bin/true"
    modes = {
        "plain": nobody + [true],
        "landlock": nobody + [exe, "wrap", "--isolation", "landlock", "--policy", pol, "--", true],
        "namespaces": nobody + [exe, "wrap", "--isolation", "namespaces", "--policy", pol, "--", true],
        "root wrap": [exe, "--root", root, "wrap", "--policy", pol, "--", true],
    }
    wall = {m: [] for m in modes}
    cpu = {m: [] for m in modes}
    failures = {}
    for _ in range(n):
        order = list(modes)
        random.shuffle(order)
        for m in order:
            ms, cpu_ms, code, err = timed_cpu(modes[m])
            if code != 0:
                failures[m] = f"exit {code}: {err[-300:]}"
                continue
            wall[m].append(ms)
            cpu[m].append(cpu_ms)
    print(f"`wrap -- {true}` as nobody, median of {n} interleaved rounds (wall ms / CPU ms):")
    for m in modes:
        print(f"  {m:<11} {med(wall[m]):6.2f} / {med(cpu[m]):6.2f}")
    for m in ("landlock", "namespaces", "root wrap"):
        pairs = [x - y for x, y in zip(wall[m], wall["plain"])]
        print(f"  {m} above plain exec (median of paired differences): {med(pairs):.2f} ms"
              + ("  (target <= 2 ms)" if m == "landlock" else ""))
    shutil.rmtree(work, ignore_errors=True)
    finish(failures, {"sandboy": root})


if __name__ == "__main__":
    main()
