#!/usr/bin/env bash
# make demo: a policy becomes a confined container that refuses escapes, and
# a WebAssembly adapter turns an Infer# report into SARIF. Run as root.
set -euo pipefail
repo=$(cd "$(dirname "$0")/.." && pwd)
target=${CARGO_TARGET_DIR:-$repo/target}
# Built for the host's own triple (.cargo/config.toml).
bins=$target/$(rustc -vV | sed -n 's/^host: //p')/debug
SB=$bins/sandboy
SG=$bins/sandboy-spec-gen
PROBE=$target/probes/probe
work=$(mktemp -d /tmp/sandboy-demo.XXXXXX)
root=$work/state
id=demo-gate-$$
cleanup() {
  "$SB" --root "$root" delete --force "$id" >/dev/null 2>&1 || true
  rm -rf "$work"
}
trap cleanup EXIT

# Bold headings on a terminal only: a log file gets plain text.
bold=; plain=
if [ -t 1 ]; then bold=$(tput bold 2>/dev/null || true); plain=$(tput sgr0 2>/dev/null || true); fi
say()  { printf '\n%s== %s%s\n' "$bold" "$*" "$plain"; }
show() { printf '%s$ %s%s\n' "$bold" "$*" "$plain"; "$@"; }

say "1. The policy: what a CI gate step may touch (policies/gate-step.toml)"
grep -E '^(read|exec|write|hide|connect|default_deny|memory|pids|timeout) ' "$repo/policies/gate-step.toml" | sed 's/^/    /'
echo
show "$SG" explain "$repo/policies/gate-step.toml" | sed 's/^/    /'

say "2. Policy -> OCI bundle (Landlock rules as an annotation, seccomp in linux.seccomp)"
mkdir -p "$work/policies" "$work/bundles"
cp "$repo/policies/gate-step.toml" "$work/policies/"
cp -a "$repo/bundles/fixtures" "$work/bundles/"
"$repo/bundles/busybox.sh" "$work/gate" >/dev/null
install -m 0755 "$PROBE" "$work/gate/rootfs/bin/probe"
show "$SG" generate --policy "$work/policies/gate-step.toml" --bundle "$work/gate" --rootfs "$work/gate/rootfs"
python3 - "$work/gate/config.json" <<'PY'
import json, sys
c = json.load(open(sys.argv[1]))
ll = json.loads(c["annotations"]["dev.sandboy.landlock"])
print("    landlock:", ", ".join(f"{r['path']} {'+'.join(map(str, r['access']))}" for r in ll["fs"]))
deny = c["linux"]["seccomp"]["syscalls"][0]["names"]
print(f"    seccomp : {len(deny)} syscalls denied with EPERM, e.g. {', '.join(deny[:6])}, ...")
print("    limits  :", json.dumps(c["linux"]["resources"].get("memory", {})), json.dumps(c["linux"]["resources"].get("pids", {})))
PY

say "3. The gate step runs inside its allowlist"
show "$SB" --root "$root" run --bundle "$work/gate" "$id"

say "4. Escape attempts from inside the same sandbox are refused"
python3 - "$work/gate/config.json" <<'PY'
import json, sys
p = sys.argv[1]; c = json.load(open(p))
c["process"]["args"] = ["/bin/sleep", "60"]
json.dump(c, open(p, "w"))
PY
"$SB" --root "$root" run --detach --bundle "$work/gate" "$id"
attempt() {
  local what=$1; shift
  local out
  out=$("$SB" --root "$root" exec "$id" /bin/probe "$@" 2>&1 || true)
  printf '    %-46s -> %s\n' "$what" "$out"
}
attempt "create inside the allowlist (/work/out.txt)" create /work/out.txt
attempt "create outside it (/dev/shm/x)"              create /dev/shm/x
printf '    %-46s -> %s bytes (masked)\n' "read the hidden /work/.env" \
  "$("$SB" --root "$root" exec "$id" /bin/sh -c 'wc -c < /work/.env' 2>&1 | tr -d ' ')"
attempt "ptrace (seccomp default deny)"               syscall ptrace
attempt "mount (seccomp default deny)"                syscall mount
attempt "connect to an unlisted port (127.0.0.1:80)"  connect 80
"$SB" --root "$root" delete --force "$id"

say "5. sandboy wrap: a host command confined for an ordinary user (nobody), no root needed"
chmod 0755 "$work"; install -d -m 0755 "$work/user" && install -m 0755 "$SB" "$work/user/sandboy"
install -d -o nobody "$work/user/checkout"
as_nobody() { (cd "$work/user/checkout" && runuser -u nobody -- "$@"); }
show as_nobody "$work/user/sandboy" wrap --exec /usr/bin --rw . -- sh -c 'echo built > out.txt && cat out.txt'
show as_nobody "$work/user/sandboy" wrap --exec /usr/bin --rw . -- cat /etc/passwd || true
show as_nobody "$work/user/sandboy" wrap --exec /usr/bin/sh --rw . -- /usr/bin/id || true

say "6. Refusals explained: a policy error located and taught, before anything runs"
printf 'version = 1\n[fs]\nwrtie = ["/tmp"]\n[limits]\nmemory = 512\n' > "$work/bad.toml"
show "$SG" check "$work/bad.toml" || true

say "7. A WebAssembly adapter turns an Infer# report into SARIF (no imports, fuel, deadline, memory cap)"
if [ -f "$target/components/infersharp.wasm" ]; then
  bash "$repo/bundles/adapter.sh" "$work/adapter" infersharp "$repo/bundles/fixtures/infersharp/report.json" >/dev/null
  "$SB" --root "$root" run --bundle "$work/adapter" demo-adapter-$$ > "$work/out.sarif"
  python3 - "$work/out.sarif" <<'PY'
import json, sys
s = json.load(open(sys.argv[1]))
run = s["runs"][0]
rules = run["tool"]["driver"].get("rules", [])
print(f"    SARIF {s['version']}: {len(run['results'])} results, {len(rules)} rules")
for r in run["results"][:3]:
    loc = r["locations"][0]["physicalLocation"]
    print(f"      {r['ruleId']}: {loc['artifactLocation']['uri']}:{loc['region']['startLine']}  {r['message']['text'][:60]}")
prov = run["properties"]["sandboy"]
print(f"    provenance: tool={prov['tool']} component sha256={prov['component_sha256'][:16]}… runtime {prov['runtime_version']}")
PY
else
  echo "    (components not built: run 'make components')"
fi

say "Try next"
cat <<TXT
    $SB --help                                   # the runc-compatible CLI
    $SB wrap --policy policies/strict.toml -- sh -c 'cat /etc/hostname && echo strict-ok'
    $SG check policies/*.toml                     # located errors, exit 2 on a bad policy
    podman --runtime $SB run --rm --rootfs <dir> true   # see deploy/README.md
    make test   |   make bench
TXT
