#!/bin/sh
# Build an OCI-wasm bundle for a WASI program: a busybox bundle (for its
# config template) with MODULE at /app.wasm and the wasm handler annotation.
# Usage: bundles/wasi.sh DIR MODULE.wasm [ARG...]
set -eu
[ $# -ge 2 ] || { echo "usage: $0 DIR MODULE.wasm [ARG...]" >&2; exit 2; }
dir=$1 module=$2; shift 2
here=$(cd "$(dirname "$0")" && pwd)
"$here/busybox.sh" "$dir" /app.wasm "$@" >/dev/null
cp "$module" "$dir/rootfs/app.wasm"
python3 - "$dir/config.json" <<'PY'
import json, sys
p = sys.argv[1]; c = json.load(open(p))
c.setdefault("annotations", {})["run.oci.handler"] = "wasm"
c["process"]["cwd"] = "/tmp"
json.dump(c, open(p, "w"), indent=2, sort_keys=True)
PY
