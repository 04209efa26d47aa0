#!/usr/bin/env python3
"""make soak: many run/delete cycles and execs into one container, with the
host's resources measured before and after (issue #19).

Environment: SANDBOY (binary), SOAK_RUNS (default 5000), SOAK_EXECS (default
2000). Prints one table; exits 1 if anything grew (fds are host-wide and
noisy on a shared machine: reported, not judged; so are zombies).
"""
import json, os, resource, shutil, subprocess, sys, tempfile, time

BIN = os.environ.get("SANDBOY") or sys.exit("SANDBOY= path to the sandboy binary")
RUNS = int(os.environ.get("SOAK_RUNS", "5000"))
EXECS = int(os.environ.get("SOAK_EXECS", "2000"))
REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def busybox(dir, *args):
    subprocess.run([os.path.join(REPO, "bundles/busybox.sh"), dir, *args], check=True)


def sandboy(root, *args, check=True):
    # stderr through a file, not a pipe: a detached container inherits it
    # and would hold a pipe open forever.
    with tempfile.TemporaryFile() as err:
        r = subprocess.run([BIN, "--root", root, *args], stdin=subprocess.DEVNULL,
                           stdout=subprocess.DEVNULL, stderr=err)
        if check and r.returncode != 0:
            err.seek(0)
            sys.exit(f"sandboy {' '.join(args)}: exit {r.returncode}: {err.read().decode()}")
    return r.returncode


def count_cgroups():
    n = 0
    for h in os.listdir("/sys/fs/cgroup"):
        d = os.path.join("/sys/fs/cgroup", h, "sandboy")
        if os.path.isdir(d):
            n += sum(1 for e in os.scandir(d) if e.is_dir() and e.name.startswith("soak-"))
    return n


def zombies():
    n = 0
    for p in os.listdir("/proc"):
        if p.isdigit():
            try:
                with open(f"/proc/{p}/stat") as f:
                    n += f.read().rsplit(")", 1)[1].split()[0] == "Z"
            except OSError:
                pass
    return n


def du(path):
    total = 0
    for dirpath, dirs, files in os.walk(path):
        total += os.lstat(dirpath).st_blocks * 512
        for f in files:
            try:
                total += os.lstat(os.path.join(dirpath, f)).st_blocks * 512
            except OSError:
                pass
    return total


def entries(path):
    return sum(len(d) + len(f) for _, d, f in os.walk(path))


def sample(root):
    with open("/proc/sys/fs/file-nr") as f:
        fds = int(f.read().split()[0])
    with open("/proc/self/mountinfo") as f:
        mounts = sum(1 for _ in f)
    return {"host open fds": fds, "mounts": mounts, "soak cgroups": count_cgroups(),
            "zombies": zombies(), "state root bytes": du(root), "state root entries": entries(root)}


def main():
    work = tempfile.mkdtemp(prefix="sandboy-soak-")
    root = os.path.join(work, "root")
    try:
        short, long_ = os.path.join(work, "short"), os.path.join(work, "long")
        busybox(short, "true")
        busybox(long_, "sleep", "100000")
        # One warm-up cycle: the root's fixed subdirectories (.bundles,
        # .locks, .exe-lower) exist from then on and are not growth.
        sandboy(root, "run", "--bundle", short, f"soak-{os.getpid()}-warm")
        sandboy(root, "delete", "--force", f"soak-{os.getpid()}-warm")
        before = sample(root)
        t = time.monotonic()
        for i in range(RUNS):
            cid = f"soak-{os.getpid()}-{i}"
            sandboy(root, "run", "--bundle", short, cid)
            sandboy(root, "delete", "--force", cid)
        runs_s = time.monotonic() - t
        cid = f"soak-{os.getpid()}-exec"
        sandboy(root, "run", "--detach", "--bundle", long_, cid)
        mid = sample(root)
        t = time.monotonic()
        for i in range(EXECS):
            sandboy(root, "exec", cid, "true")
        execs_s = time.monotonic() - t
        after_execs = sample(root)
        sandboy(root, "delete", "--force", cid)
        after = sample(root)
        peak_kib = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
        print(f"soak: {RUNS} run/delete cycles in {runs_s:.1f} s, {EXECS} execs in {execs_s:.1f} s")
        print(f"runtime peak RSS (largest sandboy process): {peak_kib} KiB")
        print(f"{'':22}{'start':>12}{'after runs':>12}{'after execs':>12}{'end':>12}")
        for k in before:
            print(f"{k:22}{before[k]:>12}{mid[k]:>12}{after_execs[k]:>12}{after[k]:>12}")
        # Host-wide counts (fds, zombies) move with the other users of a
        # shared machine: reported, not judged.
        host_wide = ("host open fds", "zombies")
        grew = [k for k in before if k not in host_wide and after[k] > before[k]]
        if grew:
            print("GREW:", ", ".join(grew))
            return 1
        return 0
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
