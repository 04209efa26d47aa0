#!/usr/bin/env bash
# make bench: lifecycle vs runc/crun, policy overhead, staged-write commit, wrap tiers, list of 1,000, spec-gen speed.
set -euo pipefail
repo=$(cd "$(dirname "$0")/.." && pwd)
target=${CARGO_TARGET_DIR:-$repo/target}
profile=${BENCH_PROFILE:-release}
# Built for the host's own triple (.cargo/config.toml).
bins=$target/$(rustc -vV | sed -n 's/^host: //p')/$profile
sandboy=$bins/sandboy
specgen=$bins/sandboy-spec-gen
n=${BENCH_N:-30}
work=$(mktemp -d /tmp/sandboy-bench.XXXXXX)
trap 'rm -rf "$work"' EXIT

"$repo/bundles/busybox.sh" "$work/plain" /bin/true >/dev/null
"$repo/bundles/busybox.sh" "$work/long" /bin/sleep 1000 >/dev/null
# The strict policy, with /bin/true as its process, on the same rootfs.
"$repo/bundles/busybox.sh" "$work/strict" /bin/true >/dev/null
sed 's|^args = .*|args = ["/bin/true"]|' "$repo/policies/strict.toml" > "$work/strict.toml"
"$specgen" generate --policy "$work/strict.toml" --bundle "$work/strict" --rootfs "$work/strict/rootfs"

echo "== container lifecycle ($profile build, $(nproc) cores)"
# One private mount namespace for all runtimes: the cgroup2 controller list
# is hidden so crun accepts this hybrid host; runc and sandboy run under the
# very same view.
unshare -m --propagation private bash -c '
  mount --bind /dev/null /sys/fs/cgroup/unified/cgroup.controllers 2>/dev/null || true
  exec python3 "$0" "$@"' "$repo/bench/bench.py" "$sandboy" "$work/plain" "$work/strict" "$n" "$work/long"

if [ -f /usr/share/containers/seccomp.json ]; then
  echo
  echo "== podman's default seccomp profile: run+delete and syscalls inside"
  gcc -static -O2 -o "$work/syscall_loop" "$repo/bench/syscall_loop.c"
  "$repo/bundles/busybox.sh" "$work/engine" /bin/true >/dev/null
  for call in personality getppid; do
    "$repo/bundles/busybox.sh" "$work/$call" /syscall_loop "$call" 1000000 >/dev/null
    cp "$work/syscall_loop" "$work/$call/rootfs/syscall_loop"
  done
  for b in engine personality getppid; do
    python3 "$repo/bench/podman_profile.py" /usr/share/containers/seccomp.json "$work/$b/config.json"
  done
  unshare -m --propagation private bash -c '
    mount --bind /dev/null /sys/fs/cgroup/unified/cgroup.controllers 2>/dev/null || true
    exec python3 "$0" "$@"' "$repo/bench/seccomp.py" "$sandboy" "$work/engine" \
      "$work/personality" "$work/getppid" "${BENCH_SECCOMP_N:-25}"
fi

echo
echo "== wrap as root: commit of a staged write path"
python3 "$repo/bench/commit.py" "$sandboy" "${BENCH_COMMIT_N:-5}" 10000

echo
echo "== wrap -- /bin/true as an ordinary user: landlock and namespaces tiers vs plain exec and root wrap"
python3 "$repo/bench/wrap.py" "$sandboy" "${BENCH_WRAP_N:-30}"

echo
echo "== list of ${BENCH_LIST_N:-1000} created containers, sandboy and runc"
python3 "$repo/bench/list.py" "$sandboy" "$work/long" "${BENCH_LIST_N:-1000}" "${BENCH_LIST_REPS:-5}"

echo
echo "== sandboy-spec-gen check/generate of 10,000 and 100,000 rules (linear?)"
python3 "$repo/bench/policy_scale.py" "$specgen"

echo
echo "== sandboy-spec-gen generate, 200-rule policy"
cargo bench -q -p sandboy-spec-gen 2>/dev/null | grep -E 'generate_200_rules_median_us' || echo "spec-gen bench unavailable"

if [ -x "$repo/bench/wasm.sh" ]; then
  echo
  echo "== OCI-wasm adapter start (cold/warm) vs native"
  bash "$repo/bench/wasm.sh" "$sandboy"
fi

echo
echo "== egress gateway: download, added latency, run+delete with [net] allow"
unshare -m --propagation private python3 "$repo/bench/egress.py" "$sandboy" "$specgen" \
  "$repo/bundles/busybox.sh" "${BENCH_EGRESS_N:-20}"

echo
echo "== denial reports: run+delete with reporting vs without, 10,000 refusals/s"
python3 "$repo/bench/denials.py" "$sandboy" "$specgen" "$repo/bundles/busybox.sh" "${BENCH_DENIALS_N:-20}"

echo
echo "== sandboy adapt: warm vs the wasm host directly, cold, unprivileged, MiB/s"
python3 "$repo/bench/adapt.py" "$sandboy" "$repo" "${BENCH_ADAPT_N:-20}"
