#!/usr/bin/env python3
"""`sandboy-spec-gen check` and `generate` of large policies: N rules split
evenly over [fs] read, exec, write and hide (paths 100 to a directory), for
N = 10,000 and 100,000; CPU time (user + system) and wall time of each, and
the 100,000/10,000 ratio (about 10 when linear in the rule count).

Usage: policy_scale.py SANDBOY_SPEC_GEN_BIN
"""
import os
import shutil
import sys
import tempfile

sys.path.insert(0, os.path.dirname(__file__))
from bench import timed_cpu  # noqa: E402


def policy(n):
    def paths(top, k):
        return ", ".join(f'"/{top}/d{i // 100}/f{i}"' for i in range(k))
    q = n // 4
    return (f'version = 1\nname = "scale"\n[fs]\nread = [{paths("usr", q)}]\n'
            f'exec = [{paths("opt", q)}]\nwrite = [{paths("tmp", q)}]\n'
            f'hide = [{paths("etc", q)}]\n[process]\nargs = ["/bin/true"]\n')


def main():
    specgen = sys.argv[1]
    work = tempfile.mkdtemp(prefix="bench-policy-scale-")
    try:
        figures = {}
        for n in (10_000, 100_000):
            path = os.path.join(work, f"p{n}.toml")
            with open(path, "w") as f:
                f.write(policy(n))
            bundle = os.path.join(work, f"b{n}")
            os.makedirs(os.path.join(bundle, "rootfs"))
            for what, argv in (("check", [specgen, "check", path]),
                               ("generate", [specgen, "generate", "--policy", path, "--bundle",
                                             bundle, "--rootfs", os.path.join(bundle, "rootfs")])):
                wall, cpu, code, err = timed_cpu(argv)
                if code != 0:
                    raise SystemExit(f"{what} of {n} rules failed ({code}): {err.strip()}")
                figures[(what, n)] = cpu
                print(f"{what:8} {n:7} rules: {cpu:8.0f} ms CPU, {wall:8.0f} ms wall")
        for what in ("check", "generate"):
            ratio = figures[(what, 100_000)] / max(figures[(what, 10_000)], 1)
            print(f"{what:8} 100,000/10,000 rules: x{ratio:.1f} (x10 is linear)")
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
