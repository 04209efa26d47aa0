#!/usr/bin/env python3
"""What engines' seccomp profiles cost, per runtime, interleaved in one run:
run+delete of busybox /bin/true carrying podman's default profile, and the
cost of one syscall inside such a container (an argument-checked one,
personality(0xffffffff), and an unconditional one, getppid), 1,000,000
calls per sample.

Usage: seccomp.py SANDBOY_BIN ENGINE_BUNDLE PERSONALITY_BUNDLE GETPPID_BUNDLE [N]
"""
import os
import random
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(__file__))
from bench import finish, med, peers, timed  # noqa: E402


def ns_per_call(argv):
    p = subprocess.run(argv, stdin=subprocess.DEVNULL, capture_output=True, text=True)
    try:
        return float(p.stdout.strip().splitlines()[-1])
    except (IndexError, ValueError):
        return None


def main():
    sandboy, engine, pers, ppid = sys.argv[1:5]
    n = int(sys.argv[5]) if len(sys.argv) > 5 else 25
    runtimes = {"sandboy": sandboy, **peers()}
    roots = {name: tempfile.mkdtemp(prefix=f"bench-sc-{name}-") for name in runtimes}
    samples = {name: {"run": [], "personality": [], "getppid": []} for name in runtimes}
    failures = {}
    for i in range(n):
        order = list(runtimes.items())
        random.shuffle(order)
        for name, bin in order:
            root = [bin, "--root", roots[name]]
            cid = f"sc-{i}"
            ms, code, err = timed([*root, "run", "--bundle", engine, cid])
            d_ms, _, _ = timed([*root, "delete", "--force", cid])
            if code != 0:
                failures.setdefault(name, err.strip()[-300:])
                continue
            samples[name]["run"].append(ms + d_ms)
            for key, bundle in (("personality", pers), ("getppid", ppid)):
                v = ns_per_call([*root, "run", "--bundle", bundle, f"{cid}-{key}"])
                timed([*root, "delete", "--force", f"{cid}-{key}"])
                if v is not None:
                    samples[name][key].append(v)

    print(f"podman's default seccomp profile, {n} interleaved iterations, medians")
    print(f"{'runtime':<10}{'run+delete ms':>15}{'personality ns':>16}{'getppid ns':>12}")
    for name in runtimes:
        s = samples[name]
        print(f"{name:<10}{med(s['run']):>15.1f}{med(s['personality']):>16.1f}{med(s['getppid']):>12.1f}")
    base = samples["sandboy"]
    print("ratios (sandboy / peer; below 1.0 is faster):")
    for peer in runtimes:
        if peer == "sandboy":
            continue
        s = samples[peer]
        print(f"  vs {peer:<5} run+delete {med(base['run'])/med(s['run']):.2f}"
              f"   personality {med(base['personality'])/med(s['personality']):.2f}"
              f"   getppid {med(base['getppid'])/med(s['getppid']):.2f}")
    finish(failures, roots)


if __name__ == "__main__":
    main()
