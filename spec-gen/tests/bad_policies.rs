//! The bad-policy corpus: every `tests/bad/*.toml` fails with exactly the
//! located message in its `*.expected` sidecar (the corpus directory is
//! written as `$DIR`). `UPDATE_GOLDEN=1` rewrites the sidecars.

use std::path::{Path, PathBuf};

use sandboy_spec_gen::{Error, Policy};

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
        let err = match Policy::parse(&src, &name, &dir) {
            Ok(_) => panic!("{name}: accepted, expected an error"),
            Err(e) => e,
        };
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
        let err = Policy::parse(&src, &name, &dir).unwrap_err();
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
read = ["etc"]
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
