//! The bad-policy corpus: every `tests/bad/*.toml` fails with exactly the
//! located messages in its `*.expected` sidecar, all of a file's problems
//! at once (the corpus directory is written as `$DIR`). A policy that
//! parses (relative paths, no command) must fail `generate` instead.
//! `UPDATE_GOLDEN=1` rewrites the sidecars.

use std::path::{Path, PathBuf};

use sandboy_spec_gen::{render, Error, Policy, RenderOptions};

/// The error of a corpus file: from parsing, or else from generating.
fn failure(src: &str, name: &str, dir: &Path) -> Error {
    match Policy::parse(src, name, dir) {
        Err(e) => e,
        Ok(p) => match render::generate(&p, &RenderOptions::default()) {
            Ok(_) => panic!("{name}: accepted by parse and generate, expected an error"),
            Err(e) => e,
        },
    }
}

fn corpus() -> (PathBuf, Vec<PathBuf>) {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/bad")
        .canonicalize()
        .unwrap();
    let mut files: Vec<PathBuf> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "toml"))
        .collect();
    files.sort();
    (dir, files)
}

#[test]
fn bad_policies_fail_with_located_messages() {
    let update = std::env::var_os("UPDATE_GOLDEN").is_some_and(|v| v == "1");
    let (dir, files) = corpus();
    assert!(files.len() >= 15, "corpus too small: {}", files.len());
    let mut mismatches = Vec::new();
    for file in &files {
        let name = file.file_name().unwrap().to_string_lossy().to_string();
        let src = std::fs::read_to_string(file).unwrap();
        let err = failure(&src, &name, &dir);
        assert!(matches!(err, Error::Policy(_)), "{name}: {err:?}");
        assert_eq!(err.exit_code(), 2, "{name}");
        for d in err.diagnostics() {
            assert!(!d.hint.is_empty(), "{name}: no hint");
            assert!(!d.key.is_empty(), "{name}: no key");
        }
        let got = format!("{err}\n").replace(&dir.display().to_string(), "$DIR");
        let expected = file.with_extension("expected");
        if update {
            std::fs::write(&expected, &got).unwrap();
            continue;
        }
        let want = std::fs::read_to_string(&expected)
            .unwrap_or_else(|e| panic!("{}: {e} (run with UPDATE_GOLDEN=1)", expected.display()));
        if want != got {
            mismatches.push(format!("{name}:\n  want: {want}  got:  {got}"));
        }
    }
    assert!(mismatches.is_empty(), "{}", mismatches.join("\n"));
}

#[test]
fn every_diagnostic_has_the_documented_shape() {
    let (dir, files) = corpus();
    for file in files {
        let name = file.file_name().unwrap().to_string_lossy().to_string();
        let src = std::fs::read_to_string(&file).unwrap();
        let err = failure(&src, &name, &dir);
        for line in err.to_string().lines() {
            // file:line:column: error: <what> in <key> [— did you mean "x"?] hint: <how>
            let rest = line
                .strip_prefix(&format!("{name}:"))
                .unwrap_or_else(|| panic!("{line}"));
            let mut parts = rest.splitn(3, ':');
            let l: usize = parts
                .next()
                .unwrap()
                .parse()
                .unwrap_or_else(|_| panic!("{line}"));
            let c: usize = parts
                .next()
                .unwrap()
                .parse()
                .unwrap_or_else(|_| panic!("{line}"));
            assert!(l >= 1 && c >= 1, "{line}");
            let tail = parts.next().unwrap();
            assert!(tail.starts_with(" error: "), "{line}");
            assert!(tail.contains(" in "), "{line}");
            assert!(tail.contains(" hint: "), "{line}");
        }
    }
}

#[test]
fn multiple_problems_are_all_reported() {
    let src = r#"
version = 1
name = "many"
[fs]
read = ["/etc/../x"]
[net]
connect = [0, 70000]
[process]
args = ["/bin/sh"]
user = "root"
"#;
    let err = Policy::parse(src, "many.toml", Path::new("/")).unwrap_err();
    let d = err.diagnostics();
    assert_eq!(d.len(), 4, "{err}");
    assert_eq!((d[0].location.line, d[0].location.column), (5, 9));
    assert_eq!(d[0].key, "fs.read");
    assert_eq!(d[1].key, "net.connect");
    assert_eq!((d[2].location.line, d[2].location.column), (7, 15));
    assert_eq!(d[3].key, "process.user");
}

#[test]
fn every_kind_of_error_comes_out_in_one_run() {
    let (dir, _) = corpus();
    let src = std::fs::read_to_string(dir.join("many_kinds.toml")).unwrap();
    let err = Policy::parse(&src, "many_kinds.toml", &dir).unwrap_err();
    let messages: Vec<String> = err.diagnostics().iter().map(|d| d.to_string()).collect();
    for needle in [
        "unknown key \"wrtie\" in fs.wrtie — did you mean \"write\"?",
        "expected an integer, found a string (\"many\") in limits.pids",
        "size 512 has no unit in limits.memory — did you mean \"512MiB\"?",
        "duration 10 has no unit in limits.timeout — did you mean \"10s\"?",
        "unknown syscall \"ptarce\" in syscalls.deny — did you mean \"ptrace\"?",
        "unknown key \"lmits\" in lmits — did you mean \"limits\"?",
    ] {
        assert!(
            messages.iter().any(|m| m.contains(needle)),
            "missing {needle:?} in:\n{err}"
        );
    }
    // File order, whatever order the checks ran in.
    let lines: Vec<usize> = err.diagnostics().iter().map(|d| d.location.line).collect();
    assert!(lines.windows(2).all(|w| w[0] <= w[1]), "{lines:?}");
}

#[test]
fn snippet_shows_the_source_line_and_a_caret() {
    let (dir, _) = corpus();
    let src = std::fs::read_to_string(dir.join("unknown_syscall.toml")).unwrap();
    let err = Policy::parse(&src, "unknown_syscall.toml", &dir).unwrap_err();
    let snippet = err.diagnostics()[0].render_snippet(&src, false);
    let want = "\
error: unknown syscall \"ptarce\" in syscalls.deny
 --> unknown_syscall.toml:5:24
  |
5 | deny = [\"personality\", \"ptarce\"]
  |                        ^^^^^^^^ did you mean \"ptrace\"?
  |
  = help: use a Linux syscall name known on x86_64 or aarch64, as `man 2 syscalls` lists them; see docs/policy.md#syscalls
";
    assert_eq!(snippet, want);
    assert!(
        !snippet.contains('\u{1b}'),
        "plain rendering has no ANSI codes"
    );
    assert!(err.diagnostics()[0]
        .render_snippet(&src, true)
        .contains('\u{1b}'));
}

#[test]
fn twenty_thousand_rules_parse() {
    // Not a timing assertion (debug builds on a shared machine vary); it
    // guards against a return of the quadratic de-duplication, which made
    // this take minutes.
    let paths: Vec<String> = (0..20_000).map(|i| format!("\"/usr/d{i}\"")).collect();
    let src = format!(
        "version = 1\n[fs]\nread = [{}, \"/usr/d0\"]\nhide = [\"/usr/d5/x\"]\n[process]\nargs = [\"/bin/true\"]\n",
        paths.join(", ")
    );
    let p = Policy::parse(&src, "big.toml", Path::new("/")).unwrap();
    assert_eq!(p.read.len(), 20_000);
    assert_eq!(p.name, "big");
}
