//! The binary's contract: subcommands, output places and exit codes
//! (0 ok, 2 usage/policy error, 1 I/O failure).

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

fn bin() -> Command {
    Command::new(env!("CARGO_BIN_EXE_sandboy-spec-gen"))
}

fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .unwrap()
        .to_path_buf()
}

fn run(args: &[&str]) -> Output {
    bin().args(args).current_dir(repo()).output().unwrap()
}

/// `generate --policy POLICY --bundle BUNDLE EXTRA…`
fn generate(policy: &str, bundle: &str, extra: &[&str]) -> Output {
    let mut args = vec!["generate", "--policy", policy, "--bundle", bundle];
    args.extend_from_slice(extra);
    run(&args)
}

/// Exit 0, or fail showing stderr.
#[track_caller]
fn assert_ok(out: &Output) {
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
}

fn tmpdir(tag: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("sandboy-spec-gen-{tag}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    d
}

#[test]
fn exit_codes() {
    assert_eq!(
        run(&["check", "policies/strict.toml"]).status.code(),
        Some(0)
    );
    assert_eq!(
        run(&[
            "check",
            "policies/strict.toml",
            "spec-gen/tests/bad/unknown_syscall.toml"
        ])
        .status
        .code(),
        Some(2)
    );
    assert_eq!(
        run(&["check", "/nonexistent/policy.toml"]).status.code(),
        Some(2)
    );
    assert_eq!(run(&["--frobnicate"]).status.code(), Some(2));
    assert_eq!(run(&["generate", "--policy"]).status.code(), Some(2));
    assert_eq!(run(&["check"]).status.code(), Some(2));
    assert_eq!(run(&["--help"]).status.code(), Some(0));
    let out = generate(
        "policies/strict.toml",
        "-",
        &["--base", "/nonexistent.json"],
    );
    assert_eq!(out.status.code(), Some(2));
}

#[test]
fn check_prints_located_errors_on_stderr() {
    // --short: the one-line form scripts and problem matchers read.
    let out = run(&[
        "check",
        "--short",
        "spec-gen/tests/bad/unknown_syscall.toml",
    ]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("spec-gen/tests/bad/unknown_syscall.toml:5:24: error: unknown syscall \"ptarce\" in syscalls.deny — did you mean \"ptrace\"? hint: "),
        "{err}"
    );
    assert!(out.stdout.is_empty());
    // Default: rustc-style, source line and caret, no colour off a terminal.
    let out = run(&["check", "spec-gen/tests/bad/unknown_syscall.toml"]);
    let err = String::from_utf8_lossy(&out.stderr);
    for needle in [
        "error: unknown syscall \"ptarce\" in syscalls.deny\n",
        " --> spec-gen/tests/bad/unknown_syscall.toml:5:24\n",
        "5 | deny = [\"personality\", \"ptarce\"]\n",
        "^^^^^^^^ did you mean \"ptrace\"?",
        "= help: ",
        "docs/policy.md#syscalls",
    ] {
        assert!(err.contains(needle), "missing {needle:?} in:\n{err}");
    }
    assert!(!err.contains('\u{1b}'), "{err}");
    assert_eq!(out.status.code(), Some(2));
}

#[test]
fn generate_refuses_relative_paths_and_a_missing_command() {
    let out = generate("spec-gen/tests/bad/relative_path.toml", "-", &["--short"]);
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("relative_path.toml:5:17: error: path \"usr/lib\" is relative: relative paths are only for sandboy wrap"),
        "{err}"
    );
    let out = generate("spec-gen/tests/bad/missing_process.toml", "-", &[]);
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("no command to run in process.args"));
    // A --base with process.args supplies the command.
    let dir = tmpdir("base-args");
    let base = dir.join("config.json");
    let default = generate("policies/strict.toml", "-", &[]);
    std::fs::write(&base, &default.stdout).unwrap();
    let out = generate(
        "spec-gen/tests/bad/missing_process.toml",
        "-",
        &["--base", base.to_str().unwrap()],
    );
    assert_ok(&out);
    assert!(String::from_utf8_lossy(&out.stdout).contains("strict-ok"));
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn generate_writes_bundle_config() {
    let dir = tmpdir("bundle");
    let out = generate("policies/gate-step.toml", dir.to_str().unwrap(), &[]);
    assert_ok(&out);
    let text = std::fs::read_to_string(dir.join("config.json")).unwrap();
    let spec: oci_spec::runtime::Spec = serde_json::from_str(&text).unwrap();
    assert_eq!(spec.root().as_ref().unwrap().path(), Path::new("rootfs"));
    let stdout = generate("policies/gate-step.toml", "-", &[]);
    assert_eq!(String::from_utf8_lossy(&stdout.stdout), text);
    let with_rootfs = generate("policies/strict.toml", "-", &["--rootfs", "/srv/busybox"]);
    assert!(String::from_utf8_lossy(&with_rootfs.stdout).contains("\"path\": \"/srv/busybox\""));
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn bad_base_is_a_config_error() {
    let dir = tmpdir("base");
    let base = dir.join("config.json");
    std::fs::write(&base, "{\"ociVersion\": 3}").unwrap();
    let out = generate(
        "policies/strict.toml",
        "-",
        &["--base", base.to_str().unwrap()],
    );
    assert_eq!(out.status.code(), Some(2));
    assert!(
        String::from_utf8_lossy(&out.stderr).contains(":1:"),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn explain_in_plain_words() {
    let out = run(&["explain", "policies/agent-tool.toml"]);
    assert_eq!(out.status.code(), Some(0));
    let text = String::from_utf8_lossy(&out.stdout);
    for needle in [
        "can read:",
        "/repo",
        "can write/create/delete in: /scratch",
        "8443",
        "ptrace",
        "fail with EPERM",
        "memory: 256MiB",
        "120s",
    ] {
        assert!(text.contains(needle), "missing {needle:?} in:\n{text}");
    }
}

#[test]
fn schema_is_json_schema_of_the_policy() {
    let out = run(&["schema"]);
    assert_eq!(out.status.code(), Some(0));
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(v["additionalProperties"], serde_json::json!(false));
    let props = v["properties"].as_object().unwrap();
    for key in [
        "version", "name", "landlock", "fs", "mount", "net", "syscalls", "process", "limits",
        "wasm", "context",
    ] {
        assert!(props.contains_key(key), "{key}");
    }
    let req: Vec<&str> = v["required"]
        .as_array()
        .unwrap()
        .iter()
        .map(|x| x.as_str().unwrap())
        .collect();
    // `name` and `[process]` are optional (wrap supplies the command).
    assert_eq!(req, ["version"], "{req:?}");
}

#[test]
fn ignore_files_are_written_and_marked() {
    let dir = tmpdir("ignore");
    let out = run(&[
        "ignore-files",
        "policies/gate-step.toml",
        "--out",
        dir.to_str().unwrap(),
    ]);
    assert_ok(&out);
    for name in [".agentsignore", ".cursorignore", ".codexignore"] {
        let text = std::fs::read_to_string(dir.join(name)).unwrap();
        assert_eq!(
            text,
            "# generated by sandboy-spec-gen from policies/gate-step.toml, do not edit\nsecrets/\n*.pem\n.env\n"
        );
    }
    let _ = std::fs::remove_dir_all(&dir);
}

/// `[net] udp` with `[net] allow` is a located policy error (exit 2, how
/// to fix: DNS goes to the stub over TCP); the same policy without `udp`
/// checks clean.
#[test]
fn udp_with_allow_is_a_located_error() {
    let out = run(&[
        "check",
        "--short",
        "spec-gen/tests/bad/net_allow_with_udp.toml",
    ]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("spec-gen/tests/bad/net_allow_with_udp.toml:5:7: error: [net] udp cannot be set together with [net] allow/allow_cidr"),
        "{err}"
    );
    assert!(
        err.contains("DNS goes to the gateway's stub over TCP"),
        "{err}"
    );
    assert_eq!(out.status.code(), Some(2));
    let dir = tmpdir("allow-only");
    let policy = dir.join("allow-only.toml");
    std::fs::write(
        &policy,
        "version = 1\n\n[net]\nallow = [\"github.com:443\"]\n",
    )
    .unwrap();
    assert_ok(&run(&["check", policy.to_str().unwrap()]));
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn explain_describes_wave_two_keys() {
    let dir = tmpdir("explain2");
    let policy = dir.join("wrapped.toml");
    std::fs::write(
        &policy,
        r#"version = 1
[fs]
read = ["/usr"]
write = [".", "~/.cache"]
[net]
allow = ["GitHub.com:443", "*.crates.io:443"]
deny = ["evil.example.com:443"]
allow_cidr = ["10.0.0.0/8:5432"]
[limits]
disk = "2GiB"
inodes = 100000
"#,
    )
    .unwrap();
    let out = run(&["explain", policy.to_str().unwrap()]);
    assert_ok(&out);
    let text = String::from_utf8_lossy(&out.stdout);
    for needle in [
        "Policy \"wrapped\"",
        "the command given to `sandboy wrap`",
        ". (the working directory of sandboy wrap)",
        "~/.cache (the home directory of sandboy wrap)",
        "UDP sockets fail with EPERM (`udp` cannot be set with allow/allow_cidr)",
        "may reach hosts: github.com:443, *.crates.io:443",
        "never reaches (checked first): evil.example.com:443",
        "may reach addresses: 10.0.0.0/8 port 5432",
        "writable storage: 2GiB and 100000 files and directories per write path",
    ] {
        assert!(text.contains(needle), "missing {needle:?} in:\n{text}");
    }
    let _ = std::fs::remove_dir_all(&dir);
}

/// Inputs that are not policy text: one located error, exit 2, at once
/// (a FIFO hung `check`, `/dev/zero` filled its memory, a bad byte gave
/// exit 1 without a place); and a symlink planted at the output is
/// replaced, not written through.
#[test]
fn odd_inputs_and_planted_outputs() {
    let dir = tmpdir("odd-inputs");
    let bad = dir.join("bad.toml");
    std::fs::write(&bad, b"version = 1\nname = \"x\xff\"\n").unwrap();
    let o = run(&["check", bad.to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(2));
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(
        err.contains("bad.toml:2:10: error: cannot read policy: not UTF-8 text"),
        "{err}"
    );
    for special in ["/dev/zero", "/"] {
        let o = run(&["check", special]);
        assert_eq!(o.status.code(), Some(2), "{special}");
        assert!(
            String::from_utf8_lossy(&o.stderr).contains("not a regular file"),
            "{special}"
        );
    }
    // Allowed: a policy and its bundle; refused: writing through a link
    // someone planted at config.json (the victim keeps its content).
    let policy = dir.join("p.toml");
    std::fs::write(&policy, "version = 1\n[process]\nargs = [\"/bin/true\"]\n").unwrap();
    let victim = dir.join("victim");
    std::fs::write(&victim, "keep").unwrap();
    let bundle = dir.join("b");
    std::fs::create_dir_all(&bundle).unwrap();
    std::os::unix::fs::symlink(&victim, bundle.join("config.json")).unwrap();
    assert_ok(&generate(
        policy.to_str().unwrap(),
        bundle.to_str().unwrap(),
        &[],
    ));
    assert_eq!(std::fs::read_to_string(&victim).unwrap(), "keep");
    assert!(std::fs::read_to_string(bundle.join("config.json"))
        .unwrap()
        .contains("\"ociVersion\""));
    std::fs::remove_dir_all(&dir).unwrap();
}

/// A full or closed stderr (or stdout) keeps the exit status: errors are
/// written ignoring a failed write instead of panicking (exit 101).
#[test]
fn unwritable_output_keeps_the_exit_status() {
    use std::process::Stdio;
    let full = || {
        std::fs::OpenOptions::new()
            .write(true)
            .open("/dev/full")
            .unwrap()
    };
    let bad = "spec-gen/tests/bad/bad_version.toml";
    let cases: [&[&str]; 4] = [
        &["check", bad],
        &["--short", "check", bad],
        &["explain", bad],
        &["generate", "--policy", bad, "--bundle", "-"],
    ];
    for args in cases {
        for closed in [false, true] {
            let mut cmd = bin();
            cmd.args(args).current_dir(repo()).stdout(Stdio::null());
            // A closed stderr: the read end of a pipe dropped at once.
            if closed {
                cmd.stderr(Stdio::piped());
            } else {
                cmd.stderr(full());
            }
            let mut child = cmd.spawn().unwrap();
            drop(child.stderr.take());
            assert_eq!(
                child.wait().unwrap().code(),
                Some(2),
                "{args:?} closed={closed}"
            );
        }
    }
    // Allowed: the same failure is still reported when stderr works.
    let o = run(&["check", bad]);
    assert_eq!(o.status.code(), Some(2));
    assert!(!o.stderr.is_empty());
    // stdout full: an ok policy is an I/O error (1), a bad one still 2.
    let status = |args: &[&str]| {
        bin()
            .args(args)
            .current_dir(repo())
            .stdout(full())
            .stderr(Stdio::null())
            .status()
            .unwrap()
            .code()
    };
    assert_eq!(status(&["check", "policies/strict.toml"]), Some(1));
    assert_eq!(status(&["check", "policies/strict.toml", bad]), Some(2));
    assert_eq!(status(&["explain", "policies/strict.toml"]), Some(1));
}
