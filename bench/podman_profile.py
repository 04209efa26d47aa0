#!/usr/bin/env python3
"""Put the seccomp profile podman gives every container into a bundle's
config.json, converted to OCI as podman 4.3 converts its seccomp.json for
x86_64 and its default capabilities (includes/excludes by arch and cap).

Usage: podman_profile.py SECCOMP_JSON CONFIG_JSON
"""
import json
import sys

# podman 4.3's default capability set.
CAPS = {"CAP_CHOWN", "CAP_DAC_OVERRIDE", "CAP_FOWNER", "CAP_FSETID", "CAP_KILL",
        "CAP_NET_BIND_SERVICE", "CAP_SETFCAP", "CAP_SETGID", "CAP_SETPCAP", "CAP_SETUID",
        "CAP_SYS_CHROOT"}
ARCH = "amd64"


def applies(rule):
    inc, exc = rule.get("includes") or {}, rule.get("excludes") or {}
    if inc.get("arches") and ARCH not in inc["arches"]:
        return False
    if inc.get("caps") and not set(inc["caps"]) <= CAPS:
        return False
    if exc.get("arches") and ARCH in exc["arches"]:
        return False
    if exc.get("caps") and set(exc["caps"]) & CAPS:
        return False
    return True


def convert(src):
    out = {"defaultAction": src["defaultAction"],
           "architectures": ["SCMP_ARCH_X86_64", "SCMP_ARCH_X86", "SCMP_ARCH_X32"],
           "syscalls": []}
    if "defaultErrnoRet" in src:
        out["defaultErrnoRet"] = src["defaultErrnoRet"]
    for rule in src["syscalls"]:
        if not applies(rule):
            continue
        r = {"names": rule["names"], "action": rule["action"]}
        if rule.get("errnoRet") is not None:
            r["errnoRet"] = rule["errnoRet"]
        if rule.get("args"):
            r["args"] = rule["args"]
        out["syscalls"].append(r)
    return out


def main():
    with open(sys.argv[1]) as f:
        profile = convert(json.load(f))
    with open(sys.argv[2]) as f:
        config = json.load(f)
    config.setdefault("linux", {})["seccomp"] = profile
    with open(sys.argv[2], "w") as f:
        json.dump(config, f, indent=2)


if __name__ == "__main__":
    main()
