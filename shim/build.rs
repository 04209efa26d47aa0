//! Link the runtime binary with packed relative relocations (DT_RELR): it is
//! a PIE started several times per container, and applying ~48k RELA
//! entries at each start was a measurable share of `create`.
fn main() {
    println!("cargo:rustc-link-arg-bins=-Wl,-z,pack-relative-relocs");
}
