//! The host binary is `execve`d inside the container, whose rootfs need not
//! have a dynamic loader or a libc (an OCI-wasm rootfs holds only the
//! `.wasm`): the bin target is linked as a static PIE (ASLR kept), glibc
//! included; the library and its tests link as usual.
//!
//! Cargo has no per-binary `-C target-feature=+crt-static` (it would
//! rebuild every dependency), and rustc names the libraries it links
//! (`-lgcc_s -lc …`) after switching to dynamic lookup. So the bin's link
//! gets a search directory, searched first, in which every one of those
//! names is a static archive (links to the system's, `libgcc_s` a linker
//! script for `libgcc_eh` + `libgcc`), and `-static-pie`.

use std::path::{Path, PathBuf};
use std::process::Command;

fn main() {
    println!("cargo:rerun-if-changed=build.rs");
    if std::env::var("CARGO_CFG_TARGET_OS").as_deref() != Ok("linux")
        || std::env::var("CARGO_CFG_TARGET_ENV").as_deref() != Ok("gnu")
    {
        return;
    }
    let dir = PathBuf::from(std::env::var("OUT_DIR").expect("cargo sets OUT_DIR")).join("static");
    std::fs::create_dir_all(&dir).expect("create the static search directory");
    for lib in ["c", "m", "pthread", "rt", "dl", "util"] {
        let name = format!("lib{lib}.a");
        let found = compiler_file(&name);
        let link = dir.join(&name);
        let _ = std::fs::remove_file(&link);
        std::os::unix::fs::symlink(&found, &link)
            .unwrap_or_else(|e| panic!("{}: {e}", link.display()));
    }
    // Shared libgcc_s is what rustc asks for; libgcc_eh + libgcc is its
    // static equivalent (what crt-static itself links).
    let script = format!(
        "INPUT({} {})\n",
        compiler_file("libgcc_eh.a").display(),
        compiler_file("libgcc.a").display()
    );
    std::fs::write(dir.join("libgcc_s.a"), script).expect("write libgcc_s.a");
    println!("cargo:rustc-link-arg-bins=-L{}", dir.display());
    println!("cargo:rustc-link-arg-bins=-static-pie");
}

/// Where the C compiler finds `name` (`cc -print-file-name`).
fn compiler_file(name: &str) -> PathBuf {
    let cc = std::env::var("CC").unwrap_or_else(|_| "cc".into());
    let out = Command::new(&cc)
        .arg(format!("-print-file-name={name}"))
        .output()
        .unwrap_or_else(|e| panic!("{cc} -print-file-name={name}: {e}"));
    let path = PathBuf::from(String::from_utf8_lossy(&out.stdout).trim());
    if !path.is_absolute() || !Path::new(&path).exists() {
        panic!("{name}: not found by {cc} (install libc6-dev and libgcc-12-dev)");
    }
    path
}
