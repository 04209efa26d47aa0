#!/usr/bin/env bash
# OCI-wasm figures for make bench: adapter container lifecycle (run+delete),
# cold (empty compile cache) and warm, against a native busybox /bin/true
# container, and adapter throughput on a large Infer# report. Medians of
# runs interleaved in random order.
set -euo pipefail
sandboy=${1:?usage: wasm.sh SANDBOY_BIN}
repo=$(cd "$(dirname "$0")/.." && pwd)
n=${BENCH_N:-30}
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
import os, random, statistics, subprocess, sys, tempfile, time
sb, work, n = sys.argv[1], sys.argv[2], int(sys.argv[3])
warm_root = tempfile.mkdtemp(prefix="wb-warm-")
def lifecycle(root, bundle, cid):
    """run + delete, in ms: a container's whole lifecycle, as in bench.py."""
    t = time.perf_counter()
    r = subprocess.run([sb, "--root", root, "run", "--bundle", bundle, cid],
                       stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    subprocess.run([sb, "--root", root, "delete", "--force", cid], capture_output=True)
    ms = (time.perf_counter() - t) * 1000
    if r.returncode != 0:
        sys.exit(f"{bundle}: exit {r.returncode}: {r.stderr.decode()[-300:]}")
    return ms
def cold(i):
    root = tempfile.mkdtemp(prefix="wb-cold-")
    try:
        return lifecycle(root, f"{work}/adapter", f"c{i}")
    finally:
        subprocess.run(["rm", "-rf", root])
lifecycle(warm_root, f"{work}/adapter", "prime")
# Native and warm adapter rounds interleave (random order within a round);
# cold starts run apart, so a half-second compile does not sit next to the
# millisecond figures it is compared with.
s = {"native": [], "adapter warm": []}
runs = {"native": lambda i: lifecycle(warm_root, f"{work}/native", f"n{i}"),
        "adapter warm": lambda i: lifecycle(warm_root, f"{work}/adapter", f"w{i}")}
for i in range(2 * n):
    order = list(runs)
    random.shuffle(order)
    for k in order:
        s[k].append(runs[k](i))
s["adapter cold"] = [cold(i) for i in range(max(3, n // 3))]
med = {k: statistics.median(v) for k, v in s.items()}
for k, v in med.items():
    print(f"  {k:<14} {v:8.1f} ms run+delete (median of {len(s[k])})")
paired = statistics.median(w / x for w, x in zip(s["adapter warm"], s["native"]))
print(f"  warm adapter / native: {med['adapter warm'] / med['native']:.2f}x (ratio of medians), "
      f"{paired:.2f}x (median of paired rounds)   cold / native: {med['adapter cold'] / med['native']:.2f}x")
size = os.path.getsize(f"{work}/big.json") / (1 << 20)
t = [lifecycle(warm_root, f"{work}/big", f"b{i}") for i in range(3)]
print(f"  throughput: {size:.1f} MiB Infer# report in {statistics.median(t):.0f} ms = {size / (statistics.median(t) / 1000):.1f} MiB/s (container lifecycle included)")
subprocess.run(["rm", "-rf", warm_root])
PY
