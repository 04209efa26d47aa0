#!/usr/bin/env python3
"""`list` of many containers: N containers are created (created, not
started: each has its init waiting, its state and its cgroups), then
`list` (table), `list --format json` and `list --quiet` are timed (median
of REPS runs: wall time, and CPU time, user + system, which a loaded host
does not inflate); runc does the same with N containers of its own in its own
root, for comparison. Everything is deleted afterwards, also on failure.

Usage: list.py SANDBOY_BIN BUNDLE [N [REPS]]
"""
import os
import shutil
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(__file__))
from bench import med, timed_cpu  # noqa: E402


def run_quiet(argv):
    with tempfile.TemporaryFile() as errf:
        p = subprocess.run(argv, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=errf)
        errf.seek(0)
        return p.returncode, errf.read().decode(errors="replace")


def measure(name, runtime, bundle, n, reps):
    root = tempfile.mkdtemp(prefix=f"bench-list-{name}-")
    ids = [f"bl{os.getpid()}-{name}-{i}" for i in range(n)]
    made = []
    try:
        for cid in ids:
            code, err = run_quiet([runtime, "--root", root, "create", "--bundle", bundle, cid])
            if code != 0:
                print(f"{name}: create {cid} failed ({code}): {err.strip()}")
                return
            made.append(cid)
        for args in (["list"], ["list", "--format", "json"], ["list", "--quiet"]):
            walls, cpus = [], []
            for _ in range(reps):
                wall, cpu, code, err = timed_cpu([runtime, "--root", root, *args])
                if code != 0:
                    print(f"{name}: {' '.join(args)} failed ({code}): {err.strip()}")
                    return
                walls.append(wall)
                cpus.append(cpu)
            print(f"{name:8} {' '.join(args):22} {n} containers: {med(walls):8.1f} ms wall, "
                  f"{med(cpus):7.1f} ms CPU (median of {reps})")
    finally:
        for cid in made:
            run_quiet([runtime, "--root", root, "delete", "--force", cid])
        shutil.rmtree(root, ignore_errors=True)


def main():
    sandboy, bundle = sys.argv[1:3]
    n = int(sys.argv[3]) if len(sys.argv) > 3 else 1000
    reps = int(sys.argv[4]) if len(sys.argv) > 4 else 5
    measure("sandboy", sandboy, bundle, n, reps)
    runc = os.environ.get("RUNC") or shutil.which("runc")
    if runc:
        measure("runc", runc, bundle, n, reps)
    else:
        print("runc: not compared (not found)")


if __name__ == "__main__":
    main()
