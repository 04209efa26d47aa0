//! The checked-policy API other crates build on: defaults, relative paths
//! for `sandboy wrap`, and the wave-2 keys (udp, egress, disk, inodes).

use std::path::Path;

use sandboy_spec_gen::policy::{Anchor, CidrRule, Grant, HostRule};
use sandboy_spec_gen::{render, Policy, RenderOptions};

fn parse(src: &str) -> Policy {
    Policy::parse(src, "dir/wrapped.toml", Path::new("/")).unwrap_or_else(|e| panic!("{e}"))
}

#[test]
fn name_and_process_are_optional() {
    let p = parse("version = 1\n");
    assert_eq!(p.name, "wrapped");
    assert!(p.args.is_empty());
    assert_eq!((p.cwd.as_str(), p.uid, p.gid), ("/", 0, 0));
    assert!(p.env[0].starts_with("PATH="));
}

#[test]
fn relative_paths_are_kept_for_wrap_and_resolved() {
    let src = "version = 1\n[fs]\nread = [\"/usr\", \".\"]\nexec = [\"./bin/\"]\nwrite = [\"~\", \"~/.cache//x\", \"out\", \"/tmp\"]\n";
    let mut p = parse(src);
    assert_eq!(p.read, ["/usr"]);
    assert_eq!(p.write, ["/tmp"]);
    let rel = p.relative_paths();
    assert_eq!(rel.len(), 5);
    assert_eq!((rel[0].grant, rel[0].anchor), (Grant::Read, Anchor::Cwd));
    assert_eq!(rel[0].written, ".");
    assert_eq!((rel[0].location.line, rel[0].location.column), (3, 17));
    assert_eq!(rel[2].anchor, Anchor::Home);
    // Still relative: generate refuses, pointing at each entry.
    let err = render::generate(&p, &RenderOptions::default()).unwrap_err();
    assert_eq!(err.exit_code(), 2);
    assert!(err.diagnostics().len() >= 5, "{err}");
    assert!(
        err.to_string()
            .contains("dir/wrapped.toml:3:17: error: path \".\" is relative"),
        "{err}"
    );

    p.resolve_relative(Path::new("/home/u/proj"), Path::new("/home/u"))
        .unwrap();
    assert!(p.relative_paths().is_empty());
    assert_eq!(p.read, ["/usr", "/home/u/proj"]);
    assert_eq!(p.exec, ["/home/u/proj/bin"]);
    assert_eq!(
        p.write,
        ["/tmp", "/home/u", "/home/u/.cache/x", "/home/u/proj/out"]
    );
}

#[test]
fn resolving_drops_duplicates() {
    let mut p = parse("version = 1\n[fs]\nread = [\"/w\", \".\", \"./\"]\n");
    p.resolve_relative(Path::new("/w"), Path::new("/h"))
        .unwrap();
    assert_eq!(p.read, ["/w"]);
}

#[test]
fn wave_two_keys() {
    let p = parse(
        r#"version = 1
[net]
allow = ["GitHub.com:443", "*.crates.io:443", "github.com:443"]
deny = ["evil.example.com:443"]
allow_cidr = ["10.0.0.0/8:5432", "fd00::/8:443"]
[limits]
disk = "2GiB"
inodes = 100000
"#,
    );
    assert_eq!(
        parse("version = 1\n[net]\nudp = [5353, 53, 53]\n").udp,
        [53, 5353]
    );
    assert_eq!(
        p.egress.allow,
        [
            HostRule {
                pattern: "github.com".into(),
                port: 443
            },
            HostRule {
                pattern: "*.crates.io".into(),
                port: 443
            }
        ]
    );
    assert!(p.egress.deny[0].matches("EVIL.example.com", 443));
    assert_eq!(
        p.egress.allow_cidr[0],
        CidrRule {
            addr: "10.0.0.0".parse().unwrap(),
            prefix: 8,
            port: 5432
        }
    );
    assert_eq!(p.egress.allow_cidr[1].prefix, 8);
    assert_eq!(p.disk.map(|d| d.0), Some(2 << 30));
    assert_eq!(p.inodes, Some(100_000));
}

#[test]
fn example_policies_have_no_wave_two_rules() {
    // Renderers rely on empty defaults meaning "nothing set".
    let p = parse("version = 1\n[process]\nargs = [\"/bin/true\"]\n");
    assert!(p.udp.is_empty() && p.egress.is_empty());
    assert!(p.disk.is_none() && p.inodes.is_none());
}

#[test]
fn write_paths_get_tmpfs_only_where_nothing_writable_covers_them() {
    let p = parse(
        r#"version = 1
[fs]
write = ["/a/b", "/a", "/dev/x", "/rw/y", "/sysx"]
[[mount]]
source = "/tmp"
destination = "/rw"
options = ["rw"]
[process]
args = ["/bin/true"]
"#,
    );
    let spec = render::render(&p, &RenderOptions::default()).unwrap();
    let tmpfs: Vec<String> = spec
        .mounts()
        .as_ref()
        .unwrap()
        .iter()
        .filter(|m| {
            m.typ().as_deref() == Some("tmpfs") && m.source().as_deref() == Some(Path::new("tmpfs"))
        })
        .map(|m| m.destination().display().to_string())
        .filter(|d| d != "/dev")
        .collect();
    // /a/b lies in /a's tmpfs, /dev/x in /dev. The "rw" bind at /rw is not
    // under [fs] write, so it is bound read-only, and /rw/y (no host
    // directory /tmp/y behind it) gets a tmpfs of its own.
    assert_eq!(tmpfs, ["/a", "/sysx", "/rw/y"]);
}

/// Every bind spec-gen renders is restricted all the way down: the
/// read-only top of a `rw` mount outside the write paths gets `rro`, its
/// writable subpath `rnosuid,rnodev,rnoexec`, a `ro` mount `rro` (host
/// mounts nested below a source would otherwise keep rw, suid, dev, exec).
#[test]
fn rendered_binds_are_restricted_below_their_source_too() {
    let src = std::env::temp_dir().join(format!("sandboy-rec-{}", std::process::id()));
    std::fs::create_dir_all(src.join("out")).unwrap();
    let p = parse(&format!(
        r#"version = 1
[fs]
read = ["/work", "/ref"]
write = ["/work/out"]
[[mount]]
source = "{src}"
destination = "/work"
options = ["rbind", "rw"]
[[mount]]
source = "{src}"
destination = "/ref"
[process]
args = ["/bin/true"]
"#,
        src = src.display()
    ));
    let spec = render::render(&p, &RenderOptions::default()).unwrap();
    let _ = std::fs::remove_dir_all(&src);
    let opts = |dest: &str| {
        spec.mounts()
            .iter()
            .flatten()
            .find(|m| m.destination() == Path::new(dest))
            .and_then(|m| m.options().clone())
            .unwrap()
    };
    assert_eq!(opts("/work"), ["rbind", "ro", "rro"]);
    assert_eq!(
        opts("/work/out"),
        ["rbind", "rw", "nosuid", "nodev", "noexec", "rnosuid", "rnodev", "rnoexec"]
    );
    assert_eq!(opts("/ref"), ["rbind", "ro", "rro"]);
}

/// The recursive form undoing a restriction goes (`ro` with `rrw` would
/// leave the nested mounts writable); what is restricted already is kept.
#[test]
fn recursive_restrictions_add_the_recursive_forms_and_drop_their_undoing() {
    let mut o: Vec<String> = ["rbind", "ro", "rrw", "noexec", "rexec", "rsuid"]
        .map(String::from)
        .to_vec();
    assert!(render::recursive_restrictions(&mut o));
    assert_eq!(o, ["rbind", "ro", "noexec", "rsuid", "rro", "rnoexec"]);
    assert!(!render::recursive_restrictions(&mut o));
    let mut rw: Vec<String> = ["rbind", "rw"].map(String::from).to_vec();
    assert!(!render::recursive_restrictions(&mut rw));
    assert_eq!(rw, ["rbind", "rw"]);
}

/// A syscall allowed back from the built-in list is said once, and the
/// allowed-back line names it (and only what was removed).
#[test]
fn explain_names_what_was_allowed_back_once() {
    let p = parse(
        r#"version = 1
[syscalls]
allow = ["ptrace"]
[process]
args = ["/bin/true"]
"#,
    );
    let text = sandboy_spec_gen::explain::explain(&p);
    let lines: Vec<&str> = text
        .lines()
        .filter(|l| l.contains("allowed back from the built-in list"))
        .collect();
    assert_eq!(
        lines,
        ["  allowed back from the built-in list: ptrace"],
        "{text}"
    );
    // Nothing allowed back: no such line.
    let p = parse("version = 1\n[process]\nargs = [\"/bin/true\"]\n");
    assert!(!sandboy_spec_gen::explain::explain(&p).contains("allowed back"));
}

/// A policy with host rules renders the egress gateway's parts: its own
/// network namespace, the annotation the runtime checks again, the proxy
/// variables, and Landlock connect ports for the proxy, the stub and the
/// allowed ports; the wire form reads back to the same rules.
#[test]
fn egress_renders_the_gateway() {
    use sandboy_spec_gen::annotations::{LandlockRuleset, EGRESS, LANDLOCK};
    use sandboy_spec_gen::policy::{Egress, EgressWire};
    let p = parse("version = 1\n[net]\nconnect = [22]\nallow = [\"github.com:443\", \"*.crates.io:443\"]\ndeny = [\"evil.crates.io:443\"]\nallow_cidr = [\"10.0.0.0/8:5432\"]\n[process]\nargs = [\"/bin/true\"]\n");
    let spec = render::render(&p, &RenderOptions::default()).unwrap();
    let ann = spec.annotations().clone().unwrap();
    let wire = EgressWire::decode(&ann[EGRESS]).unwrap();
    assert_eq!(wire.proxy_port, 3128);
    assert_eq!(Egress::from_wire(&wire).unwrap(), p.egress);
    let rs = LandlockRuleset::decode(&ann[LANDLOCK]).unwrap();
    assert_eq!(rs.net.unwrap().connect, [22, 53, 443, 3128]);
    let env = spec.process().as_ref().unwrap().env().clone().unwrap();
    for v in [
        "HTTP_PROXY=http://127.0.0.1:3128",
        "https_proxy=http://127.0.0.1:3128",
        "NO_PROXY=localhost,127.0.0.1,::1",
    ] {
        assert!(env.iter().any(|e| e == v), "{v} missing from {env:?}");
    }
    let ns = spec.linux().as_ref().unwrap().namespaces().clone().unwrap();
    assert!(ns
        .iter()
        .any(|n| n.typ() == oci_spec::runtime::LinuxNamespaceType::Network && n.path().is_none()));
    assert!(p.egress.permits("static.crates.io", 443));
    assert!(!p.egress.permits("evil.crates.io", 443));
    assert!(!p.egress.permits_name("evil.crates.io"));
    // Without host rules: no annotation, no proxy variables.
    let plain = render::render(
        &parse("version = 1\n[process]\nargs = [\"/bin/true\"]\n"),
        &RenderOptions::default(),
    )
    .unwrap();
    assert!(!plain.annotations().clone().unwrap().contains_key(EGRESS));
    // A wire form edited by hand is refused.
    let bad = EgressWire {
        allow: vec!["*.com:443".into()],
        deny: vec![],
        allow_cidr: vec![],
        proxy_port: 3128,
        outside_only: false,
    };
    assert!(Egress::from_wire(&bad).is_err());
    let clash = EgressWire {
        allow: vec!["a.example.com:3128".into()],
        deny: vec![],
        allow_cidr: vec![],
        proxy_port: 3128,
        outside_only: false,
    };
    assert!(Egress::from_wire(&clash).is_err());
}
