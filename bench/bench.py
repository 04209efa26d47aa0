#!/usr/bin/env python3
"""Container lifecycle benchmark: sandboy vs runc vs crun (and youki, when
given) on one busybox
`/bin/true` bundle, interleaved in one run, medians and ratios.

Runs inside one private mount namespace (see bench.sh) in which the cgroup2
controller list is hidden, which crun needs on this hybrid-cgroup host; every
runtime runs under that same namespace, so the comparison stays fair.

With a LONG_BUNDLE (a process that keeps running), it also times what
engines do to a running container: `exec` of /bin/true into it (health
checks, `kubectl exec`) and `delete --force` of it (`podman rm -f`).

Usage: bench.py SANDBOY_BIN BUNDLE POLICY_BUNDLE [N [LONG_BUNDLE]]
"""
import os
import random
import shutil
import statistics
import subprocess
import sys
import tempfile
import time


def timed(argv):
    """Wall time (ms), exit status and stderr of one command."""
    ms, _, code, err = timed_cpu(argv)
    return ms, code, err


def timed_cpu(argv):
    """Wall time (ms), CPU time (ms, user + system of the command, which a
    loaded host does not inflate), exit status and stderr of one command."""
    # stderr through a file: a created container inherits it and would hold
    # a pipe open forever.
    with tempfile.TemporaryFile() as errf:
        t0 = time.perf_counter()
        p = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                             stderr=errf)
        _, status, ru = os.wait4(p.pid, 0)
        ms = (time.perf_counter() - t0) * 1000
        errf.seek(0)
        err = errf.read().decode(errors="replace")
    code = os.waitstatus_to_exitcode(status)
    return ms, (ru.ru_utime + ru.ru_stime) * 1000, code, err


def peak_rss_kib(argv):
    """Peak RSS of one runtime command, through GNU time: a process forked
    from this Python interpreter would report the interpreter's RSS (the
    high-water mark survives fork and exec), so the small `time` binary is
    the parent instead. Run apart from the timed loop to keep it clean."""
    with tempfile.TemporaryFile() as errf:
        p = subprocess.run(["/usr/bin/time", "-f", "RSS=%M", *argv], stdin=subprocess.DEVNULL,
                           stdout=subprocess.DEVNULL, stderr=errf)
        errf.seek(0)
        lines = [l for l in errf.read().decode(errors="replace").splitlines() if l.startswith("RSS=")]
    return int(lines[-1][4:]) if p.returncode == 0 and lines else 0


def peers():
    """The peer runtimes found here. youki is not packaged for Debian: give
    its binary as YOUKI=/path to compare against libcontainer's own runtime
    (any peer can be pointed at a binary the same way, e.g. CRUN=/opt/crun)."""
    found = {}
    for name in ("runc", "crun", "youki"):
        path = os.environ.get(name.upper()) or shutil.which(name)
        if path:
            found[name] = path
        else:
            print(f"{name}: not compared (not found; {name.upper()}=/path/to/{name} adds it)")
    return found


def main():
    sandboy, bundle, policy_bundle = sys.argv[1:4]
    n = int(sys.argv[4]) if len(sys.argv) > 4 else 30
    long_bundle = sys.argv[5] if len(sys.argv) > 5 else None
    runtimes = {"sandboy": sandboy, **peers()}
    cases = [(name, bin, bundle) for name, bin in runtimes.items()]
    cases.append(("sandboy+strict", sandboy, policy_bundle))
    roots = {c[0]: tempfile.mkdtemp(prefix=f"bench-{c[0]}-") for c in cases}
    steps = ("run", "create", "start", "delete", "exec", "kill+delete", "rss")
    samples = {c[0]: {step: [] for step in steps} for c in cases}
    failures = {}

    def timed_steps(name, runtime, cid, steps):
        """Time each (step, argv) in turn; on a failure, record it and
        force-delete the container."""
        for step, argv in steps:
            ms, code, err = timed([*runtime, *argv])
            if code != 0:
                failures.setdefault(name, f"{step}: {err.strip()[-300:]}")
                timed([*runtime, "delete", "--force", cid])
                return
            samples[name][step].append(ms)

    for i in range(n):
        order = cases[:]
        random.shuffle(order)
        for name, bin, b in order:
            root = ["--root", roots[name]]
            cid = f"bench-{i}"
            ms, code, err = timed([bin, *root, "run", "--bundle", b, cid])
            d_ms, _, _ = timed([bin, *root, "delete", "--force", cid])
            if code != 0:
                failures.setdefault(name, err.strip()[-300:])
                continue
            samples[name]["run"].append(ms + d_ms)
            cid = f"bench-{i}-c"
            timed_steps(name, [bin, *root], cid, (("create", ["create", "--bundle", b, cid]),
                                                  ("start", ["start", cid]),
                                                  ("delete", ["delete", "--force", cid])))
            if long_bundle and name != "sandboy+strict":
                cid = f"bench-{i}-l"
                _, code, err = timed([bin, *root, "run", "--detach", "--bundle", long_bundle, cid])
                if code != 0:
                    failures.setdefault(name, f"run --detach: {err.strip()[-300:]}")
                    continue
                timed_steps(name, [bin, *root], cid, (("exec", ["exec", cid, "/bin/true"]),
                                                      ("kill+delete", ["delete", "--force", cid])))

    # Peak RSS of each runtime command (create/start/delete; the runtime
    # process only: create returns before the container process runs).
    if os.access("/usr/bin/time", os.X_OK):
        for name, bin, b in cases:
            root = ["--root", roots[name]]
            for argv in (["create", "--bundle", b, "rss"], ["start", "rss"], ["delete", "--force", "rss"]):
                samples[name]["rss"].append(peak_rss_kib([bin, *root, *argv]))

    print(f"lifecycle of busybox /bin/true, {n} interleaved iterations, medians in ms")
    print(f"{'runtime':<16}{'run+delete':>12}{'create':>9}{'start':>9}{'delete':>9}{'c+s+d':>9}{'peak RSS':>11}")
    table = {}
    for name, _, _ in cases:
        s = samples[name]
        csd = med(s["create"]) + med(s["start"]) + med(s["delete"])
        table[name] = (med(s["run"]), csd)
        print(f"{name:<16}{med(s['run']):>12.1f}{med(s['create']):>9.1f}{med(s['start']):>9.1f}"
              f"{med(s['delete']):>9.1f}{csd:>9.1f}{(max(s['rss']) if s['rss'] else 0)/1024:>9.1f}MB")
    if long_bundle:
        print("on a running container (sleep), medians in ms:")
        print(f"{'runtime':<16}{'exec /bin/true':>16}{'delete --force':>16}")
        for name, _, _ in cases:
            s = samples[name]
            if s["exec"]:
                print(f"{name:<16}{med(s['exec']):>16.1f}{med(s['kill+delete']):>16.1f}")
    base = table["sandboy"]
    print("ratios (sandboy / peer; below 1.0 is faster):")
    for peer in ("runc", "crun", "youki"):
        if peer in table:
            print(f"  vs {peer:<5} run+delete {base[0]/table[peer][0]:.2f}   create+start+delete {base[1]/table[peer][1]:.2f}")
    # The overhead as the median of per-iteration differences: plain and
    # strict run in the same shuffled round, so machine noise mostly cancels.
    def paired(key):
        a, b = samples["sandboy+strict"], samples["sandboy"]
        if key == "csd":
            xs = [sum(t) for t in zip(a["create"], a["start"], a["delete"])]
            ys = [sum(t) for t in zip(b["create"], b["start"], b["delete"])]
        else:
            xs, ys = a[key], b[key]
        return med([x - y for x, y in zip(xs, ys)])
    print(f"strict policy overhead (sandboy+strict - sandboy, median of paired differences):"
          f" run+delete {paired('run'):+.1f} ms, create+start+delete {paired('csd'):+.1f} ms")
    finish(failures, roots)


def med(xs):
    return statistics.median(xs) if xs else float("nan")


def finish(failures, roots):
    """Say which runtimes failed (and how), and remove the state roots."""
    for name, err in failures.items():
        print(f"FAILED runs for {name}: {err}")
    for r in roots.values():
        shutil.rmtree(r, ignore_errors=True)


if __name__ == "__main__":
    main()
