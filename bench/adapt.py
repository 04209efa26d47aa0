#!/usr/bin/env python3
"""make bench: `sandboy adapt` of the Infer# fixture, warm (compile cache
filled), against the same component run directly by the wasm host (`sandboy-wasm
adapt`: no container, no confinement, same cache); cold start (empty
state root, so an empty compile cache); unprivileged warm (as `nobody`,
through the wrap tiers); MiB/s on a 50 MiB generated Infer# report.
Medians of interleaved runs. Usage: adapt.py SANDBOY REPO [N]"""
import json, os, random, shutil, subprocess, sys, tempfile, time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from bench import med  # noqa: E402  (one median for every bench script)

sb, repo = sys.argv[1], sys.argv[2]
n = int(sys.argv[3]) if len(sys.argv) > 3 else 20
# $CARGO_TARGET_DIR/<host triple>/<profile>/sandboy (.cargo/config.toml);
# make components writes $CARGO_TARGET_DIR/components.
target = os.environ.get("CARGO_TARGET_DIR") or os.path.join(repo, "target")
components = os.environ.get("SANDBOY_COMPONENTS", os.path.join(target, "components"))
env = dict(os.environ, SANDBOY_REGISTRY=f"{repo}/components/adapters.toml", SANDBOY_COMPONENTS=components)
fixture = f"{repo}/components/testdata/infersharp-report.json"
comp = f"{components}/infersharp.wasm"
hostbin = os.path.join(os.path.dirname(os.path.abspath(sb)), "sandboy-wasm")
work = tempfile.mkdtemp(prefix="sandboy-abench-")
os.chmod(work, 0o755)
warm_root = f"{work}/root"
host_cache = f"{work}/host-cache"


def timed(argv, **kw):
    t = time.perf_counter()
    r = subprocess.run(argv, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, env=kw.pop("env", env), **kw)
    ms = (time.perf_counter() - t) * 1000
    if r.returncode != 0:
        sys.exit(f"{argv[:6]}: exit {r.returncode}: {r.stderr.decode()[-400:]}")
    return ms


def adapt(root, report=fixture, extra=()):
    return timed([sb, "--root", root, "adapt", *extra, "--tool", "infersharp",
                  "--artifact", f"report.json={report}", "-o", f"{work}/out.sarif"])


def host(report=fixture):
    return timed([hostbin, "adapt", "--limits", "{}", "--cache", host_cache,
                  "--", comp, "--tool", "infersharp", "--artifact", f"report.json={report}"])


nobody_cache = f"{work}/nobody-cache"
# The host's own cache: adapt's entries are sealed with nobody's key from
# the kernel keyring, the host run directly writes unsealed ones, and
# sharing one directory would make each refuse (and recompile) the other's.
nobody_host_cache = f"{work}/nobody-host-cache"
for d in (nobody_cache, nobody_host_cache):
    os.makedirs(d)
    shutil.chown(d, "nobody", "nogroup")
shutil.copy(fixture, f"{work}/report.json")
os.chmod(f"{work}/report.json", 0o644)


# setpriv, not runuser: no PAM session, whose ~4 ms on both sides of the
# unprivileged ratio hid most of what adapt adds.
AS_NOBODY = ["setpriv", "--reuid=nobody", "--regid=nogroup", "--clear-groups", "--reset-env", "--"]


def unprivileged():
    return timed([*AS_NOBODY, "env", f"XDG_CACHE_HOME={nobody_cache}",
                  f"SANDBOY_REGISTRY={env['SANDBOY_REGISTRY']}", f"SANDBOY_COMPONENTS={components}",
                  sb, "adapt", "--tool", "infersharp", "--artifact", f"report.json={work}/report.json"], cwd="/")


def host_nobody():
    return timed([*AS_NOBODY, "env", hostbin, "adapt", "--limits", "{}",
                  "--cache", nobody_host_cache, "--", comp, "--tool", "infersharp",
                  "--artifact", f"report.json={work}/report.json"], cwd="/")


runs = {"adapt (root, container)": lambda: adapt(warm_root), "wasm host directly": host,
        "adapt (unprivileged)": unprivileged, "wasm host directly (nobody)": host_nobody}
for f in runs.values():  # fill the caches
    f()
s = {k: [] for k in runs}
for _ in range(n):
    order = list(runs)
    random.shuffle(order)
    for k in order:
        s[k].append(runs[k]())


def cold():
    root = tempfile.mkdtemp(prefix="sandboy-abench-cold-")
    try:
        return adapt(root)
    finally:
        shutil.rmtree(root, ignore_errors=True)


s["adapt cold (root)"] = [cold() for _ in range(max(3, n // 4))]
m = {k: med(v) for k, v in s.items()}
for k, v in m.items():
    print(f"  {k:<26} {v:8.1f} ms (median of {len(s[k])})")
base = m["wasm host directly"]
print(f"  warm adapt / host: root {m['adapt (root, container)'] / base:.2f}x, unprivileged "
      f"{m['adapt (unprivileged)'] / m['wasm host directly (nobody)']:.2f}x (both via setpriv) (target <= 1.3x)")

# 50 MiB report: the fixture's issues repeated with distinct lines, under a
# policy whose [wasm] and [limits] admit it.
base_issues = json.load(open(fixture))
big = f"{work}/big.json"
count, written = 0, 1
with open(big, "w") as f:
    f.write("[")
    while written < (50 << 20):
        j = dict(base_issues[count % len(base_issues)]); j["line"] = count + 1; j["hash"] = f"{count:x}"; j["key"] = f"k{count}"
        chunk = ("," if count else "") + json.dumps(j)
        f.write(chunk)
        written += len(chunk)
        count += 1
    f.write("]")
pol = open(f"{repo}/policies/ownaudit-adapter.toml").read()
pol = pol[:pol.index("[limits]")] + """[limits]
memory = "4GiB"
pids = 32
timeout = "300s"

[wasm]
fuel = 1_000_000_000_000
deadline = "240s"
memory = "3GiB"
max_input = "64MiB"
max_output = "1GiB"
max_results = 10_000_000
"""
open(f"{work}/big.toml", "w").write(pol)
size = os.path.getsize(big) / (1 << 20)
t = [adapt(warm_root, big, ["--policy", f"{work}/big.toml"]) for _ in range(3)]
print(f"  throughput: {size:.1f} MiB Infer# report ({count} issues) in {med(t):.0f} ms = "
      f"{size / (med(t) / 1000):.1f} MiB/s (adapt as root, container included)")
shutil.rmtree(work, ignore_errors=True)
