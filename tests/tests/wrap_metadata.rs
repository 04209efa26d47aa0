//! Metadata writes in unprivileged `wrap` (docs/security.md, "Metadata"):
//! Landlock does not check chmod, chown, utimes or xattr writes, so the
//! landlock tier sends them to its watchdog, which allows them only on
//! objects in `[fs] write`. A real host user runs each probe on a file it
//! owns outside the policy (refused, EACCES, the file unchanged, a warn
//! event) and on one in a write path (done, the change seen from the host).
//! The namespaces tier's host root is read-only: the same probes outside
//! fail there too.

use std::fs;
use std::os::unix::fs::{MetadataExt, PermissionsExt};
use std::os::unix::process::CommandExt;
use std::path::Path;

use sandboy_tests::*;

/// What the host sees once a probe worked.
type Changed = fn(&Path) -> bool;

/// (probe subcommand, its effect).
fn cases() -> Vec<(&'static str, Changed)> {
    vec![
        ("chmod", |p| mode(p) == 0o644),
        ("fchmod", |p| mode(p) == 0o644),
        ("utime", |p| {
            fs::metadata(p).unwrap().mtime() == 1_000_000_000
        }),
        ("setxattr", has_xattr),
        ("chown-self", |_| true),
    ]
}

fn mode(p: &Path) -> u32 {
    fs::metadata(p).unwrap().permissions().mode() & 0o7777
}

fn has_xattr(p: &Path) -> bool {
    let c = std::ffi::CString::new(p.to_str().unwrap()).unwrap();
    let mut buf = [0u8; 8];
    // SAFETY: getxattr into a buffer that lives for the call, its true size.
    let n = unsafe {
        libc::getxattr(
            c.as_ptr(),
            c"user.sandboy".as_ptr(),
            buf.as_mut_ptr().cast(),
            buf.len(),
        )
    };
    n == 1 && buf[0] == b'1'
}

/// A test user, a scratch directory, and the probe and sandboy copied
/// where the user can run them; `None` (a skip) when something is missing.
struct Setup {
    user: TestUser,
    dir: TempDir,
    probe: std::path::PathBuf,
    sandboy: std::path::PathBuf,
}

impl Setup {
    fn new(test: &str) -> Option<Setup> {
        let probe_bin = target_dir().join("probes/probe");
        if !probe_bin.is_file() {
            skip(test, "the probe is not built (make probes)");
            return None;
        }
        let sandboy_bin = need_sandboy(test)?;
        let user = TestUser::create(test)?;
        let dir = TempDir::new("wrapmeta");
        let probe = user.reachable_copy(&probe_bin, &dir);
        let sandboy = user.reachable_copy(&sandboy_bin, &dir);
        Some(Setup {
            user,
            dir,
            probe,
            sandboy,
        })
    }
}

/// A fresh 0600 file owned by `user`, mtime untouched.
fn fresh(user: &TestUser, path: &Path) {
    let _ = fs::remove_file(path);
    fs::write(path, "secret\n").unwrap();
    fs::set_permissions(path, fs::Permissions::from_mode(0o600)).unwrap();
    user.chown(path);
}

#[test]
fn the_landlock_tier_changes_metadata_only_in_write_paths() {
    let Some(Setup {
        user,
        dir,
        probe,
        sandboy,
    }) = Setup::new("the_landlock_tier_changes_metadata_only_in_write_paths")
    else {
        return;
    };
    for d in ["out", "outside"] {
        fs::create_dir_all(dir.path().join(d)).unwrap();
        user.chown(&dir.path().join(d));
    }
    let policy = dir.path().join("p.toml");
    fs::write(
        &policy,
        format!(
            "version = 1\n[fs]\nread = [\"/etc\", \"/proc\", \"{outside}\"]\nexec = [\"{bin}\"]\nwrite = [\"{out}\"]\n[net]\nnamespace = \"{{ns}}\"\n",
            outside = dir.path().join("outside").display(),
            bin = probe.parent().unwrap().display(),
            out = dir.path().join("out").display(),
        ),
    )
    .unwrap();
    let template = fs::read_to_string(&policy).unwrap();
    for (tier, ns) in [("landlock", "host"), ("namespaces", "none")] {
        fs::write(&policy, template.replace("{ns}", ns)).unwrap();
        fs::set_permissions(&policy, fs::Permissions::from_mode(0o644)).unwrap();
        for (probe_cmd, changed) in cases() {
            let run = |file: &Path| {
                let mut cmd = user.cmd(&sandboy);
                cmd.args(["wrap", "--isolation", tier, "--policy"])
                    .arg(&policy)
                    .arg("--")
                    .arg(&probe)
                    .arg(probe_cmd)
                    .arg(file);
                if matches!(probe_cmd, "chmod" | "fchmod") {
                    cmd.arg("644");
                }
                cmd.current_dir(dir.path());
                output_timeout(&mut cmd, std::time::Duration::from_secs(60))
            };
            // Outside [fs] write (readable, owned by the user): refused.
            let victim = dir.path().join("outside/key");
            fresh(&user, &victim);
            let before = fs::metadata(&victim).unwrap();
            let o = run(&victim);
            let what = format!("{tier} {probe_cmd} outside");
            assert_eq!(o.status.code(), Some(1), "{what}: {}", text(&o.stderr));
            let out = text(&o.stdout);
            let want = if tier == "landlock" {
                "errno=EACCES"
            } else {
                "errno="
            };
            assert!(out.contains(want), "{what}: {out} {}", text(&o.stderr));
            let after = fs::metadata(&victim).unwrap();
            assert_eq!(mode(&victim), 0o600, "{what}");
            assert_eq!(after.mtime(), before.mtime(), "{what}");
            assert!(!has_xattr(&victim), "{what}");
            if tier == "landlock" {
                assert!(
                    text(&o.stderr).contains("metadata outside [fs] write"),
                    "{what}: no warn event: {}",
                    text(&o.stderr)
                );
            }
            // Inside the write path: done, and the host sees it (the
            // namespaces tier stages writes; its commit is wrap.rs's test).
            if tier == "landlock" {
                let mine = dir.path().join("out/f");
                fresh(&user, &mine);
                let o = run(&mine);
                let what = format!("{tier} {probe_cmd} in [fs] write");
                assert_eq!(
                    o.status.code(),
                    Some(0),
                    "{what}: {} {}",
                    text(&o.stdout),
                    text(&o.stderr)
                );
                assert!(changed(&mine), "{what}: not changed on the host");
            }
        }
    }
}

/// `chattr` is an ioctl Landlock does not check on regular files, and the
/// landlock tier's host files are writable underneath: a red team set
/// `+A +S +d` on a file the policy lists read-only. Refused (EPERM, the
/// flags as they were); the same user sets the flag outside the sandbox.
#[test]
fn the_landlock_tier_refuses_file_attribute_flags() {
    let test = "the_landlock_tier_refuses_file_attribute_flags";
    let Some(Setup {
        user,
        dir,
        probe,
        sandboy,
    }) = Setup::new(test)
    else {
        return;
    };
    let ro = dir.path().join("ro");
    fs::create_dir_all(&ro).unwrap();
    user.chown(&ro);
    let file = ro.join("f");
    fresh(&user, &file);
    let flags = |p: &Path| {
        let f = fs::File::open(p).unwrap();
        let mut v: libc::c_int = 0;
        // SAFETY: FS_IOC_GETFLAGS writes one int into `v`, which outlives the call.
        let rc = unsafe { libc::ioctl(std::os::fd::AsRawFd::as_raw_fd(&f), 0x8008_6601, &mut v) };
        (rc == 0).then_some(v)
    };
    let Some(before) = flags(&file) else {
        skip(test, "this file system has no attribute flags");
        return;
    };
    // FS_IOC_SETFLAGS, and the same flag by path with no ioctl at all:
    // file_setattr (Linux 6.17).
    for how in ["chattr", "fsetattr"] {
        let o = output_timeout(
            user.cmd(&sandboy)
                .args(["wrap", "--isolation", "landlock", "--exec"])
                .arg(probe.parent().unwrap())
                .arg("--ro")
                .arg(&ro)
                .arg("--")
                .arg(&probe)
                .arg(how)
                .arg(&file),
            std::time::Duration::from_secs(60),
        );
        assert_eq!(
            text(&o.stdout),
            "errno=EPERM\n",
            "{how}: {}",
            text(&o.stderr)
        );
        assert_eq!(flags(&file), Some(before), "{how}: the flags changed");
    }
    // Counterpart: outside the sandbox the user may.
    let o = capture(user.cmd(&probe).arg("chattr").arg(&file));
    assert_eq!(text(&o.stdout), "ok\n", "{}", text(&o.stderr));
    assert_ne!(flags(&file), Some(before));
    let o = capture(user.cmd(&probe).arg("fsetattr").arg(&file));
    assert_eq!(text(&o.stdout), "ok\n", "{}", text(&o.stderr));
}

/// The metadata guard's rule shares one seccomp program with the policy's
/// `setuid-modes` guard: in a write path, where the watchdog would make a
/// chmod, a setuid or setgid mode is still refused (EPERM) before the call
/// reaches it, in both tiers; a plain mode on the same file goes through,
/// and from the host the file is no plant (a host user running it keeps
/// its own euid).
#[test]
fn a_setuid_mode_is_refused_in_a_write_path_where_a_plain_one_is_made() {
    let t = "a_setuid_mode_is_refused_in_a_write_path_where_a_plain_one_is_made";
    let Some(Setup {
        user,
        dir,
        probe,
        sandboy,
    }) = Setup::new(t)
    else {
        return;
    };
    let out = dir.path().join("out");
    fs::create_dir_all(&out).unwrap();
    user.chown(&out);
    for (tier, ns) in [("landlock", "host"), ("namespaces", "none")] {
        let policy = dir.path().join(format!("{tier}.toml"));
        fs::write(
            &policy,
            format!(
                "version = 1\n[fs]\nread = [\"/etc\", \"/proc\"]\nexec = [\"{bin}\", \"/usr/bin\"]\nwrite = [\"{out}\"]\n[net]\nnamespace = \"{ns}\"\n",
                bin = probe.parent().unwrap().display(),
                out = out.display(),
            ),
        )
        .unwrap();
        fs::set_permissions(&policy, fs::Permissions::from_mode(0o644)).unwrap();
        let plant = out.join(format!("p-{tier}"));
        let (p, f) = (probe.display(), plant.display());
        let script = format!(
            "cp {p} {f} && {p} chmod {f} 4755; {p} chmod {f} 2755; {p} fchmod {f} 6755; {p} chmod {f} 0755"
        );
        let mut cmd = user.cmd(&sandboy);
        cmd.args(["wrap", "--isolation", tier, "--policy"])
            .arg(&policy)
            .args(["--", "sh", "-c", &script])
            .current_dir(dir.path());
        let o = output_timeout(&mut cmd, std::time::Duration::from_secs(60));
        if tier == "namespaces" && text(&o.stderr).contains("user namespace") {
            skip(
                t,
                "namespaces tier: unprivileged user namespaces are refused here",
            );
            continue;
        }
        assert_exit(&o, 0);
        assert_eq!(
            text(&o.stdout).lines().collect::<Vec<_>>(),
            ["errno=EPERM", "errno=EPERM", "errno=EPERM", "ok"],
            "{tier}: {}",
            text(&o.stderr)
        );
        assert_eq!(mode(&plant), 0o755, "{tier}");
        let o = capture(
            std::process::Command::new(&plant)
                .arg("euid")
                .uid(65534)
                .gid(65534),
        );
        assert_eq!(text(&o.stdout).trim(), "euid=65534", "{tier}");
    }
}

/// The metadata guard's listener cannot be taken over. Once the watchdog is
/// gone (killed from outside: a CI runner's SIGKILL), a background process
/// of the step lives on, orphaned, still under Landlock and the policy's
/// filter, whose metadata rule now notifies nobody. The kernel would hand
/// such a call to the newest filter's listener, so the orphan installs a
/// filter of its own with a listener, answers CONTINUE and `chmod 644`s a
/// secret outside every write path. Refused: a listener of its own gets
/// EBUSY, the chmod fails (ENOSYS), the file stays 0600. Counterpart: a
/// filter without a listener still installs, and the orphan still writes
/// its write path.
#[test]
fn an_orphan_of_a_killed_watchdog_cannot_take_the_metadata_guard_over() {
    let t = "an_orphan_of_a_killed_watchdog_cannot_take_the_metadata_guard_over";
    let Some(setup) = Setup::new(t) else {
        return;
    };
    let (user, dir, probe, sandboy) = (&setup.user, &setup.dir, &setup.probe, &setup.sandboy);
    let (out, outside) = (dir.path().join("out"), dir.path().join("outside"));
    for d in [&out, &outside] {
        fs::create_dir_all(d).unwrap();
        user.chown(d);
    }
    let secret = outside.join("key");
    fresh(user, &secret);
    let policy = dir.path().join("p.toml");
    fs::write(
        &policy,
        format!(
            "version = 1\n[fs]\nread = [\"/dev/null\", \"/usr\", \"/etc\", \"/proc\", \"{outside}\"]\nexec = [\"/usr/bin\", \"{bin}\"]\nwrite = [\"{out}\"]\n[net]\nnamespace = \"host\"\n",
            outside = outside.display(),
            bin = probe.parent().unwrap().display(),
            out = out.display(),
        ),
    )
    .unwrap();
    fs::set_permissions(&policy, fs::Permissions::from_mode(0o644)).unwrap();
    let result = out.join("result");
    let script = format!(
        "{p} orphan-chmod {s} {r} & echo started; exec sleep 60",
        p = probe.display(),
        s = secret.display(),
        r = result.display()
    );
    let mut cmd = user.cmd(sandboy);
    cmd.args(["wrap", "--isolation", "landlock", "--policy"])
        .arg(&policy)
        .args(["--", "sh", "-c", &script])
        .current_dir(dir.path())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::null());
    let mut child = cmd.spawn().expect("spawning wrap");
    let mut line = String::new();
    std::io::BufRead::read_line(
        &mut std::io::BufReader::new(child.stdout.take().unwrap()),
        &mut line,
    )
    .unwrap();
    assert_eq!(line, "started\n");
    // The watchdog: the user's process still running sandboy's `wrap`.
    let watchdog = user
        .processes()
        .into_iter()
        .find(|pid| {
            fs::read(format!("/proc/{pid}/cmdline"))
                .is_ok_and(|c| c.split(|b| *b == 0).any(|a| a == b"--isolation"))
        })
        .expect("the watchdog is running");
    // SAFETY: kill with a pid just read; no memory involved.
    assert_eq!(unsafe { libc::kill(watchdog, libc::SIGKILL) }, 0);
    let _ = child.wait();
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(30);
    while !result.exists() && std::time::Instant::now() < deadline {
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
    std::thread::sleep(std::time::Duration::from_millis(100));
    let got = fs::read_to_string(&result).unwrap_or_default();
    assert_eq!(
        got, "plain=ok listener=EBUSY chmod=ENOSYS\n",
        "the orphan's own listener decided its chmod"
    );
    assert_eq!(mode(&secret), 0o600, "the secret's mode changed");
}
