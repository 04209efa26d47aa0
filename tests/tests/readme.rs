//! The README's first quick start runs verbatim, as an ordinary user the
//! test creates: the commands are read from the README itself (the block
//! after `<!-- quickstart:wrap`), so they cannot drift from what works.

use std::fs;

use sandboy_tests::{repo, sandboy_bin, text, TempDir, TestUser};

fn quickstart_block(readme: &str, marker: &str) -> String {
    let start = readme
        .find(marker)
        .unwrap_or_else(|| panic!("README.md has no {marker} marker"));
    let rest = &readme[start..];
    let open = rest
        .find("```sh\n")
        .expect("a ```sh block after the marker")
        + 6;
    let close = rest[open..].find("```").expect("the block is closed") + open;
    rest[open..close].to_owned()
}

#[test]
fn readme_wrap_quick_start_runs_verbatim_as_an_ordinary_user() {
    let test = "readme_wrap_quick_start_runs_verbatim_as_an_ordinary_user";
    let Some(user) = TestUser::create(test) else {
        return;
    };
    let readme = fs::read_to_string(repo().join("README.md")).unwrap();
    let block = quickstart_block(&readme, "<!-- quickstart:wrap");
    // "After make install, from this checkout": sandboy on PATH, and a copy
    // of the checkout's policies in the user's home, where checkouts live.
    let dir = TempDir::new("readme");
    let bin = user.reachable_copy(&sandboy_bin(), &dir);
    let checkout = std::path::PathBuf::from(format!("/home/{}/checkout", user.name));
    fs::create_dir_all(checkout.join("policies")).unwrap();
    for p in fs::read_dir(repo().join("policies")).unwrap() {
        let p = p.unwrap().path();
        fs::copy(&p, checkout.join("policies").join(p.file_name().unwrap())).unwrap();
    }
    for p in [&checkout, &checkout.join("policies")] {
        user.chown(p);
    }
    let path = format!(
        "{}:/usr/local/bin:/usr/bin:/bin:/usr/sbin:/sbin",
        bin.parent().unwrap().display()
    );
    let o = user
        .cmd("sh")
        .arg("-c")
        .arg(&block)
        .current_dir(&checkout)
        .env("PATH", path)
        .output()
        .unwrap();
    let out = text(&o.stdout);
    let err = text(&o.stderr);
    assert!(o.status.success(), "quick start failed: {out}\n{err}");
    // Allowed: the working directory is writable, /usr/bin runs.
    assert!(out.contains("built\n"), "{out}\n{err}");
    assert_eq!(
        fs::read_to_string(checkout.join("out.txt")).unwrap(),
        "built\n"
    );
    // Denied: /etc/passwd is listed nowhere.
    assert!(out.contains("refused: exit 1"), "{out}\n{err}");
    assert!(err.contains("Permission denied"), "{err}");
    assert!(!out.contains("root:x:0:0"), "{out}");
    // A policy file: private /tmp, no network.
    assert!(out.contains("strict-ok\n"), "{out}\n{err}");
}

/// The second quick start runs verbatim as root: sandboy and spec-gen on
/// PATH as after `make install`, from the checkout. The gate step passes
/// under sandboy; under podman, the policy's annotations allow the write to
/// /tmp and refuse the one to /root (the block's exit status 1).
#[test]
fn readme_podman_quick_start_runs_verbatim_as_root() {
    let test = "readme_podman_quick_start_runs_verbatim_as_root";
    if !sandboy_tests::need_root(test) || !sandboy_tests::need_tool(test, "podman") {
        return;
    }
    let readme = fs::read_to_string(repo().join("README.md")).unwrap();
    let block = quickstart_block(&readme, "<!-- quickstart:podman");
    let bin = sandboy_bin();
    let path = format!(
        "{}:/usr/local/bin:/usr/bin:/bin:/usr/sbin:/sbin",
        bin.parent().unwrap().display()
    );
    // The block's `mktemp -d` lands in a directory removed afterwards.
    let tmp = TempDir::new("readme-podman");
    let o = std::process::Command::new("sh")
        .arg("-c")
        .arg(&block)
        .current_dir(repo())
        .env("PATH", path)
        .env("TMPDIR", tmp.path())
        .output()
        .unwrap();
    let out = text(&o.stdout);
    let err = text(&o.stderr);
    assert_eq!(o.status.code(), Some(1), "{out}\n{err}");
    assert!(out.contains("gate-step fixture: ok"), "{out}\n{err}");
    assert!(err.contains("/root/x: Permission denied"), "{err}");
    assert!(!err.contains("Error:"), "podman failed: {err}");
}

#[test]
fn readme_adapt_quick_start_runs_verbatim_as_an_ordinary_user() {
    let test = "readme_adapt_quick_start_runs_verbatim_as_an_ordinary_user";
    if !["infersharp.wasm", "passthrough.wasm"]
        .iter()
        .all(|c| sandboy_tests::components_dir().join(c).is_file())
    {
        sandboy_tests::skip(test, "components not built (make components)");
        return;
    }
    let Some(user) = TestUser::create(test) else {
        return;
    };
    let readme = fs::read_to_string(repo().join("README.md")).unwrap();
    let block = quickstart_block(&readme, "<!-- quickstart:adapt");
    // "After make install": bin/ and share/sandboy/ side by side; "from
    // this checkout": its test data in the user's home.
    let dir = TempDir::new("readme-adapt");
    let bin = sandboy_tests::mini_install(&dir, &user);
    let checkout = std::path::PathBuf::from(format!("/home/{}/checkout", user.name));
    let data = checkout.join("components/testdata");
    fs::create_dir_all(&data).unwrap();
    for f in ["infersharp-report.json", "roslyn.sarif", "codeql.sarif"] {
        fs::copy(repo().join("components/testdata").join(f), data.join(f)).unwrap();
    }
    for p in [&checkout, &checkout.join("components"), &data] {
        user.chown(p);
    }
    let path = format!(
        "{}:/usr/bin:/bin:/usr/sbin:/sbin",
        bin.parent().unwrap().display()
    );
    let o = user
        .cmd("sh")
        .arg("-c")
        .arg(format!("set -e\n{block}"))
        .current_dir(&checkout)
        .env("PATH", path)
        .env_remove("SANDBOY_REGISTRY")
        .env_remove("SANDBOY_COMPONENTS")
        .output()
        .unwrap();
    let (out, err) = (text(&o.stdout), text(&o.stderr));
    assert!(o.status.success(), "quick start failed: {out}\n{err}");
    assert!(
        out.contains("codeql\t") && out.contains("db-build -> analyze"),
        "{out}"
    );
    let one: serde_json::Value =
        serde_json::from_slice(&fs::read(checkout.join("infersharp.sarif")).unwrap()).unwrap();
    assert_eq!(one["runs"][0]["results"].as_array().unwrap().len(), 4);
    let all: serde_json::Value =
        serde_json::from_slice(&fs::read(checkout.join("audit.sarif")).unwrap()).unwrap();
    let tools: Vec<&str> = all["runs"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["properties"]["sandboy"]["tool"].as_str().unwrap())
        .collect();
    assert_eq!(tools, ["roslyn", "codeql"]);
    assert!(err.contains("adapt: roslyn: 2 results"), "{err}");
}
