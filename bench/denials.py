#!/usr/bin/env python3
"""What denial reporting costs (issue 16), release build, audit on:

* run+delete of a confined /bin/true with reporting (`--audit=enable`: the
  supervisor's audit reader, seccomp's log flag) against without
  (`--audit=off`), interleaved; target < 0.5 ms added (median of paired
  per-round differences);
* a payload making 10,000 refused syscalls a second for a few seconds while
  doing fixed CPU work, and the same loop on the host beside it: the
  payload's and the host's work with reporting against without (target:
  both within 10%), and the report holds the refusal (one distinct line,
  its count).

Usage: denials.py SANDBOY SPEC_GEN BUSYBOX_SH [N]. Kernel auditing is
switched on for the run and put back as it was.
"""
import json
import os
import shutil
import socket
import struct
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(__file__))
from bench import med, timed  # noqa: E402

POLICY = """version = 1
name = "bench-denials"
[fs]
read = ["/etc"]
exec = ["/"]
write = ["/tmp"]
[net]
namespace = "none"
[syscalls]
deny = ["personality"]
[process]
args = {args}
"""


def audit(kind, payload=b""):
    """One NETLINK_AUDIT request (1000 AUDIT_GET, 1001 AUDIT_SET); the reply body."""
    s = socket.socket(socket.AF_NETLINK, socket.SOCK_RAW, 9)
    try:
        flags = 5 if kind == 1001 else 1
        s.send(struct.pack("=IHHII", 16 + len(payload), kind, flags, 0, 0) + payload)
        while True:
            buf = s.recv(8192)
            t = struct.unpack_from("=H", buf, 4)[0]
            if (kind == 1000 and t == 1000) or (kind != 1000 and t == 2):
                return buf[16:]
    finally:
        s.close()


def audit_enabled():
    return struct.unpack_from("=I", audit(1000), 4)[0]


def set_audit(enabled):
    audit(1001, struct.pack("=II", 1, enabled) + bytes(32))


def bundle(work, name, specgen, busybox, args, extra=None):
    d = os.path.join(work, name)
    subprocess.run([busybox, d, "/bin/true"], check=True, stdout=subprocess.DEVNULL)
    if extra:
        shutil.copy(extra, os.path.join(d, "rootfs", os.path.basename(extra)))
    pol = os.path.join(work, name + ".toml")
    with open(pol, "w") as f:
        f.write(POLICY.format(args=json.dumps(args)))
    subprocess.run([specgen, "generate", "--policy", pol, "--bundle", d,
                    "--rootfs", os.path.join(d, "rootfs")], check=True,
                   stdout=subprocess.DEVNULL)
    return d


def run_delete(sandboy, root, b, cid, mode):
    ms, code, err = timed([sandboy, "--root", root, f"--audit={mode}", "run", "--bundle", b, cid])
    subprocess.run([sandboy, "--root", root, "delete", "--force", cid],
                   stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    if code != 0:
        sys.exit(f"run ({mode}) failed: {err}")
    return ms


def loop(sandboy, root, b, loop_bin, cid, mode, seconds, report):
    """The payload's and the host's (work units) for one run of the loop."""
    host = subprocess.Popen([loop_bin, str(seconds), "0"], stdout=subprocess.PIPE, text=True)
    p = subprocess.run([sandboy, "--root", root, f"--audit={mode}", "run", "--report", report,
                        "--bundle", b, cid], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                       text=True)
    subprocess.run([sandboy, "--root", root, "delete", "--force", cid],
                   stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    h = host.communicate()[0].split()
    if p.returncode != 0:
        sys.exit(f"loop ({mode}) failed: {p.stderr}")
    units, refusals = map(int, p.stdout.split())
    return units, refusals, int(h[0])


def main():
    sandboy, specgen, busybox = sys.argv[1:4]
    n = int(sys.argv[4]) if len(sys.argv) > 4 else 20
    work = tempfile.mkdtemp(prefix="bench-denials-")
    root = os.path.join(work, "root")
    before = audit_enabled()
    try:
        set_audit(1)
        loop_bin = os.path.join(work, "denial_loop")
        subprocess.run(["gcc", "-static", "-O2", "-o", loop_bin,
                        os.path.join(os.path.dirname(__file__), "denial_loop.c")], check=True)
        true_b = bundle(work, "true", specgen, busybox, ["/bin/true"])
        seconds = 3
        loop_b = bundle(work, "loop", specgen, busybox, ["/denial_loop", str(seconds), "10000"],
                        loop_bin)
        for mode in ("off", "enable"):
            run_delete(sandboy, root, true_b, f"bd-warm-{mode}", mode)
        diffs, on, off = [], [], []
        for i in range(n):
            order = ["off", "enable"] if i % 2 else ["enable", "off"]
            got = {m: run_delete(sandboy, root, true_b, f"bd-{i}-{m}", m) for m in order}
            on.append(got["enable"])
            off.append(got["off"])
            diffs.append(got["enable"] - got["off"])
        print(f"run+delete, reporting off: {med(off):.2f} ms, on: {med(on):.2f} ms, "
              f"added (median of {n} paired differences): {med(diffs):+.2f} ms (target < 0.5)")
        res = {"off": [], "enable": []}
        for i in range(3):
            for mode in (("off", "enable") if i % 2 else ("enable", "off")):
                report = os.path.join(work, f"report-{i}-{mode}.jsonl")
                res[mode].append(loop(sandboy, root, loop_b, loop_bin, f"bd-loop-{i}-{mode}",
                                      mode, seconds, report) + (report,))
        pay = med([r[0] for r in res["enable"]]) / med([r[0] for r in res["off"]])
        host = med([r[2] for r in res["enable"]]) / med([r[2] for r in res["off"]])
        rate = med([r[1] for r in res["enable"]]) / seconds
        print(f"{rate:,.0f} refusals/s for {seconds} s: payload work with reporting / without "
              f"{pay:.3f}, host's {host:.3f} (target both >= 0.90)")
        for r in res["enable"]:
            lines = [json.loads(l) for l in open(r[3]) if l.strip()]
            kinds = sorted({(l.get("kind"), l.get("syscall") or l.get("target")) for l in lines})
            counted = sum(l.get("count", 1) for l in lines)
            print(f"  report: {len(lines)} distinct line(s) {kinds}, count {counted} of {r[1]} refusals")
    finally:
        set_audit(before)
        subprocess.run(["sh", "-c", f"for c in $({sandboy} --root {root} list -q 2>/dev/null); do "
                        f"{sandboy} --root {root} delete --force $c; done"], check=False)
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
