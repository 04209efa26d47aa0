#!/bin/sh
# Build a busybox OCI bundle: DIR/rootfs (Debian's busybox-static and its
# applet links) and DIR/config.json (runc's default spec, non-terminal).
# Usage: bundles/busybox.sh DIR [ARG...]   (default args: sh)
# Reproducible: the same busybox and arguments give the same bundle.
set -eu
[ $# -ge 1 ] || { echo "usage: $0 DIR [ARG...]" >&2; exit 2; }
dir=$1; shift
bb=${BUSYBOX:-/bin/busybox}
[ -x "$bb" ] || { echo "$0: $bb not found; apt-get install busybox-static" >&2; exit 1; }
"$bb" --list >/dev/null 2>&1 || { echo "$0: $bb is not a static busybox" >&2; exit 1; }

rootfs=$dir/rootfs
mkdir -p "$rootfs"/bin "$rootfs"/etc "$rootfs"/tmp "$rootfs"/proc "$rootfs"/sys \
         "$rootfs"/dev "$rootfs"/root "$rootfs"/work "$rootfs"/usr/bin "$rootfs"/var
cp "$bb" "$rootfs/bin/busybox"
for applet in $("$bb" --list); do
  [ "$applet" = busybox ] || ln -sf busybox "$rootfs/bin/$applet"
done
printf 'root:x:0:0:root:/root:/bin/sh\nnobody:x:65534:65534:nobody:/:/bin/false\n' > "$rootfs/etc/passwd"
printf 'root:x:0:\nnogroup:x:65534:\n' > "$rootfs/etc/group"
printf 'sandboy\n' > "$rootfs/etc/hostname"
chmod 1777 "$rootfs/tmp"

[ $# -gt 0 ] || set -- sh
python3 - "$dir/config.json" "$@" <<'PY'
import json, sys
path, args = sys.argv[1], sys.argv[2:]
caps = ["CAP_AUDIT_WRITE", "CAP_KILL", "CAP_NET_BIND_SERVICE"]
spec = {
  "ociVersion": "1.0.2",
  "process": {
    "terminal": False,
    "user": {"uid": 0, "gid": 0},
    "args": args,
    "env": ["PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin", "TERM=xterm"],
    "cwd": "/",
    "capabilities": {k: caps for k in ["bounding", "effective", "permitted"]},
    "rlimits": [{"type": "RLIMIT_NOFILE", "hard": 1024, "soft": 1024}],
    "noNewPrivileges": True,
  },
  "root": {"path": "rootfs", "readonly": True},
  "hostname": "sandboy",
  "mounts": [
    {"destination": "/proc", "type": "proc", "source": "proc"},
    {"destination": "/dev", "type": "tmpfs", "source": "tmpfs",
     "options": ["nosuid", "strictatime", "mode=755", "size=65536k"]},
    {"destination": "/dev/pts", "type": "devpts", "source": "devpts",
     "options": ["nosuid", "noexec", "newinstance", "ptmxmode=0666", "mode=0620", "gid=5"]},
    {"destination": "/dev/shm", "type": "tmpfs", "source": "shm",
     "options": ["nosuid", "noexec", "nodev", "mode=1777", "size=65536k"]},
    {"destination": "/dev/mqueue", "type": "mqueue", "source": "mqueue",
     "options": ["nosuid", "noexec", "nodev"]},
    {"destination": "/sys", "type": "sysfs", "source": "sysfs",
     "options": ["nosuid", "noexec", "nodev", "ro"]},
    {"destination": "/tmp", "type": "tmpfs", "source": "tmpfs",
     "options": ["nosuid", "nodev", "mode=1777", "size=65536k"]},
  ],
  "linux": {
    "resources": {"devices": [{"allow": False, "access": "rwm"}]},
    "namespaces": [{"type": t} for t in ["pid", "network", "ipc", "uts", "mount"]],
    "maskedPaths": ["/proc/acpi", "/proc/asound", "/proc/kcore", "/proc/keys",
                    "/proc/latency_stats", "/proc/timer_list", "/proc/timer_stats",
                    "/proc/sched_debug", "/sys/firmware", "/proc/scsi"],
    "readonlyPaths": ["/proc/bus", "/proc/fs", "/proc/irq", "/proc/sys",
                      "/proc/sysrq-trigger"],
  },
}
with open(path, "w") as f:
    json.dump(spec, f, indent=2, sort_keys=True)
    f.write("\n")
PY
