#!/usr/bin/env bash
# OCI-wasm figures for make bench: adapter container start, cold (empty
# compile cache) and warm, against a native busybox /bin/true container, and
# adapter throughput on a large Infer# report. Medians of interleaved runs.
set -euo pipefail
sandboy=${1:?usage: wasm.sh SANDBOY_BIN}
repo=$(cd "$(dirname "$0")/.." && pwd)
n=${BENCH_N:-15}
work=$(mktemp -d /tmp/sandboy-wbench.XXXXXX)
trap 'rm -rf "$work"' EXIT
export SANDBOY_SPEC_GEN=${SANDBOY_SPEC_GEN:-$(dirname "$sandboy")/sandboy-spec-gen}

"$repo/bundles/busybox.sh" "$work/native" /bin/true >/dev/null
"$repo/bundles/adapter.sh" "$work/adapter" infersharp "$repo/bundles/fixtures/infersharp/report.json" >/dev/null
# A large report: the fixture's issues repeated with distinct lines.
python3 - "$repo/bundles/fixtures/infersharp/report.json" "$work/big.json" <<'PY'
import json, sys
base = json.load(open(sys.argv[1]))
per = len(json.dumps(base)) / len(base)
count = min(9000, int((16 << 20) / per))  # stays under max_results
out = []
for i in range(count):
    j = dict(base[i % len(base)]); j["line"] = i + 1; j["hash"] = f"{i:x}"; j["key"] = f"k{i}"
    out.append(j)
json.dump(out, open(sys.argv[2], "w"))
PY
"$repo/bundles/adapter.sh" "$work/big" infersharp "$work/big.json" >/dev/null

python3 - "$sandboy" "$work" "$n" <<'PY'
import os, statistics, subprocess, sys, tempfile, time
sb, work, n = sys.argv[1], sys.argv[2], int(sys.argv[3])
warm_root = tempfile.mkdtemp(prefix="wb-warm-")
def run(root, bundle, cid):
    t = time.perf_counter()
    r = subprocess.run([sb, "--root", root, "run", "--bundle", bundle, cid],
                       stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    ms = (time.perf_counter() - t) * 1000
    subprocess.run([sb, "--root", root, "delete", "--force", cid], capture_output=True)
    if r.returncode != 0:
        sys.exit(f"{bundle}: exit {r.returncode}: {r.stderr.decode()[-300:]}")
    return ms
run(warm_root, f"{work}/adapter", "prime")
s = {"native": [], "adapter cold": [], "adapter warm": []}
for i in range(n):
    s["native"].append(run(warm_root, f"{work}/native", f"n{i}"))
    cold = tempfile.mkdtemp(prefix="wb-cold-")
    s["adapter cold"].append(run(cold, f"{work}/adapter", f"c{i}"))
    subprocess.run(["rm", "-rf", cold])
    s["adapter warm"].append(run(warm_root, f"{work}/adapter", f"w{i}"))
med = {k: statistics.median(v) for k, v in s.items()}
for k, v in med.items():
    print(f"  {k:<14} {v:8.1f} ms (median of {n})")
print(f"  warm adapter / native: {med['adapter warm'] / med['native']:.2f}x   cold / native: {med['adapter cold'] / med['native']:.2f}x")
size = os.path.getsize(f"{work}/big.json") / (1 << 20)
t = [run(warm_root, f"{work}/big", f"b{i}") for i in range(3)]
print(f"  throughput: {size:.1f} MiB Infer# report in {statistics.median(t):.0f} ms = {size / (statistics.median(t) / 1000):.1f} MiB/s (container start included)")
subprocess.run(["rm", "-rf", warm_root])
PY
