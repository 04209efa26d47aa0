#!/usr/bin/env python3
"""Egress gateway benchmark (issue 17), all on loopback:

* throughput: a 200 MiB download from a local HTTP server (busybox httpd on
  127.77.0.1), by host curl directly vs by curl in a root `sandboy wrap`
  container through the gateway's proxy and through its DNS stub
  (`--noproxy '*'`), and by curl under unprivileged `sandboy wrap` (as
  nobody, namespaces tier: the gateway in wrap itself) through the proxy;
  each round back to back, the median of the paired ratios to direct
  (BENCH_EGRESS_ROUNDS, default 5); target >= 80% of direct;
* added latency per connection: the median time of one small HTTP GET on a
  new connection, inside the container through the proxy minus on the
  host directly (target < 1 ms);
* run+delete of a busybox /bin/true container whose policy has `[net] allow`
  vs the same policy without it (median of paired differences).

Runs in its own private mount namespace with a hosts file naming the
server (the supervisor's resolver reads it); the host is not changed.

Usage: egress.py SANDBOY SPECGEN BUSYBOX_SH N
       egress.py client URL N      (inside: median ms of N GETs)
"""
import os
import shutil
import socket
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.request

from bench import finish, med, timed  # noqa: E402

SIZE = 200 * 1024 * 1024


def client(url, n):
    """Median ms of `n` GETs of `url`, each on a new connection."""
    times = []
    for _ in range(int(n)):
        t0 = time.perf_counter()
        urllib.request.urlopen(url).read()
        times.append((time.perf_counter() - t0) * 1000)
    print(f"{statistics.median(times):.3f}")


def free_port():
    with socket.socket() as s:
        s.bind(("127.77.0.1", 0))
        return s.getsockname()[1]


def policy(path, port, allow, host=True):
    """`host`: a policy for root wrap on the host's filesystem, else for
    a busybox bundle."""
    net = (f'[net]\nallow = ["bench.egress.test:{port}"]\n'
           f'allow_cidr = ["127.77.0.0/24:{port}"]\n') if allow else "[net]\n"
    here = os.path.dirname(os.path.abspath(__file__))
    fs = (f'read = ["/usr", "/lib", "/lib64", "/etc", "/bin", "/proc", "{here}"]\n'
          'exec = ["/usr", "/bin", "/lib", "/lib64"]\nwrite = ["/dev/null"]\n') if host else \
        'read = ["/etc"]\nexec = ["/bin"]\n'
    with open(path, "w") as f:
        f.write(f'version = 1\nname = "egress-bench"\n[fs]\n{fs}{net}[process]\nargs = ["/bin/true"]\n')


def unprivileged_wrap(work, sandboy, port):
    """The wrap command line as nobody in the namespaces tier (None, and
    a line saying why, when that cannot run here)."""
    if os.geteuid() != 0 or not shutil.which("setpriv"):
        print("unprivileged wrap: skipped (needs root to switch to nobody, and setpriv)")
        return None
    # nobody must reach the binary, the policy and this script's directory.
    os.chmod(work, 0o755)
    exe = os.path.join(work, "sandboy")
    shutil.copy(sandboy, exe)
    os.chmod(exe, 0o755)
    pol = os.path.join(work, "user.toml")
    policy(pol, port, True)
    os.chmod(pol, 0o644)
    return ["setpriv", "--reuid", "65534", "--regid", "65534", "--clear-groups",
            exe, "wrap", "--isolation", "namespaces", "--policy", pol, "--"]


def main():
    if sys.argv[1] == "client":
        return client(sys.argv[2], sys.argv[3])
    sandboy, specgen, busybox_sh, n = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4])
    work = tempfile.mkdtemp(prefix="sandboy-egress-bench.")
    root = os.path.join(work, "root")
    failures = {}
    try:
        www = os.path.join(work, "www")
        os.makedirs(www)
        with open(os.path.join(www, "big"), "wb") as f:
            f.truncate(SIZE)
        with open(os.path.join(www, "small"), "w") as f:
            f.write("x" * 100)
        hosts = os.path.join(work, "hosts")
        with open(hosts, "w") as f:
            f.write("127.0.0.1 localhost\n127.77.0.1 bench.egress.test\n")
        subprocess.run(["mount", "--bind", hosts, "/etc/hosts"], check=True)
        port = free_port()
        httpd = subprocess.Popen(["busybox", "httpd", "-f", "-p", f"127.77.0.1:{port}", "-h", www])
        time.sleep(0.3)
        pol = os.path.join(work, "allow.toml")
        policy(pol, port, True)
        wrap = [sandboy, "--root", root, "wrap", "--policy", pol, "--"]
        curl = ["curl", "-s", "-o", "/dev/null", "-w", "%{speed_download}"]
        url = f"http://bench.egress.test:{port}"

        def speed(argv):
            out = subprocess.run(argv, capture_output=True, text=True)
            if out.returncode != 0:
                failures["download"] = out.stderr[-300:]
                return float("nan")
            return float(out.stdout.strip().splitlines()[-1])

        # Each round measures every path back to back and keeps its ratio
        # to that round's direct download: on a shared machine the load
        # drifts between rounds more than within one.
        paths = {"proxy": wrap + curl + [f"{url}/big"],
                 "DNS stub": wrap + curl + ["--noproxy", "*", f"{url}/big"]}
        user = unprivileged_wrap(work, sandboy, port)
        if user:
            paths["proxy of unprivileged wrap (namespaces tier, as nobody)"] = user + curl + [f"{url}/big"]
        rounds = int(os.environ.get("BENCH_EGRESS_ROUNDS", "5"))
        direct, speeds = [], {k: [] for k in paths}
        for _ in range(rounds):
            d = speed(curl + [f"http://127.77.0.1:{port}/big"])
            direct.append(d)
            for k, argv in paths.items():
                speeds[k].append((speed(argv), d))
        mib = 1024 * 1024
        print(f"200 MiB download, median of {rounds} rounds: direct {med(direct) / mib:.0f} MiB/s")
        for k, xs in speeds.items():
            ratio = med([100 * v / d for v, d in xs])
            print(f"  through the {k}: {med([v for v, _ in xs]) / mib:.0f} MiB/s, "
                  f"{ratio:.0f}% of direct (median of paired ratios; target >= 80%)")

        me = os.path.abspath(__file__)
        gets = str(max(n, 50))
        host_ms = subprocess.run(["python3", me, "client", f"http://127.77.0.1:{port}/small", gets],
                                 capture_output=True, text=True).stdout.strip()
        gw = subprocess.run(wrap + ["/usr/bin/python3", me, "client", f"{url}/small", gets],
                            capture_output=True, text=True)
        if host_ms and gw.returncode == 0:
            added = float(gw.stdout.strip()) - float(host_ms)
            print(f"one GET on a new connection: direct {float(host_ms):.2f} ms, through the "
                  f"proxy {float(gw.stdout.strip()):.2f} ms: added {added:+.2f} ms (median of {gets})")
        else:
            failures["latency"] = gw.stderr[-300:]

        bundles = {}
        for name, allow in (("allow", True), ("plain", False)):
            b = os.path.join(work, name)
            subprocess.run([busybox_sh, b, "/bin/true"], check=True, stdout=subprocess.DEVNULL)
            p = os.path.join(work, f"{name}.toml")
            policy(p, port, allow, host=False)
            subprocess.run([specgen, "generate", "--policy", p, "--bundle", b,
                            "--rootfs", os.path.join(b, "rootfs")], check=True,
                           stdout=subprocess.DEVNULL)
            bundles[name] = b
        times = {"allow": [], "plain": []}
        for i in range(n):
            for name, b in bundles.items():
                ms, code, err = timed([sandboy, "--root", root, "run", "--bundle", b,
                                       f"egress-bench-{name}-{i}"])
                if code != 0:
                    failures[name] = err[-300:]
                    continue
                times[name].append(ms)
        diff = med([a - b for a, b in zip(times["allow"], times["plain"])])
        print(f"run+delete: without allow {med(times['plain']):.1f} ms, with allow "
              f"{med(times['allow']):.1f} ms: {diff:+.1f} ms (median of paired differences, n={n})")
        httpd.kill()
    finally:
        finish(failures, {"egress": root})
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
