//! Adapter components built from WAT with wit-component, for the hostile
//! cases (shared by the wasm crate's tests and the `adapt` suite).

use wit_parser::Resolve;

/// The adapter world.
pub const ADAPTER_WIT: &str = include_str!("../../wit/adapter.wit");

/// Componentizes a core module (WAT) against a world of `extra_wit` (a
/// package that may `include` the adapter world) or the adapter world.
pub fn component_from_core(core_wat: &str, extra_wit: Option<&str>, world: &str) -> Vec<u8> {
    let mut resolve = Resolve::default();
    let adapter = resolve.push_str("adapter.wit", ADAPTER_WIT).unwrap();
    let main = match extra_wit {
        Some(w) => resolve.push_str("extra.wit", w).unwrap(),
        None => adapter,
    };
    let world = resolve.select_world(&[main], Some(world)).unwrap();
    let mut core = wat::parse_str(core_wat).unwrap();
    wit_component::embed_component_metadata(
        &mut core,
        &resolve,
        world,
        wit_component::StringEncoding::UTF8,
    )
    .unwrap();
    wit_component::ComponentEncoder::default()
        .module(&core)
        .unwrap()
        .validate(true)
        .encode()
        .unwrap()
}

/// Escapes bytes for a WAT string literal.
pub fn wat_bytes(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("\\{b:02x}")).collect()
}

/// A core module implementing the adapter ABI whose `to-sarif` returns
/// `Ok(output)` (or `Err(output)` when `err`), with a bump allocator.
/// `body` (optional) runs first, e.g. a spin loop.
pub fn adapter_core(output: &[u8], err: bool, body: &str) -> String {
    let disc = if err { 1 } else { 0 };
    let len = output.len();
    let pages = (len + 2 * 65536) / 65536 + 1;
    format!(
        r#"(module
  (memory (export "memory") {pages})
  (global $heap (mut i32) (i32.const {heap}))
  (data (i32.const 65536) "{data}")
  (func (export "cabi_realloc") (param i32 i32 i32 i32) (result i32)
    (local $ret i32)
    (local.set $ret (i32.and (i32.add (global.get $heap) (i32.sub (local.get 2) (i32.const 1)))
                             (i32.xor (i32.sub (local.get 2) (i32.const 1)) (i32.const -1))))
    (global.set $heap (i32.add (local.get $ret) (local.get 3)))
    (block $done (loop $grow
      (br_if $done (i32.le_u (global.get $heap) (i32.mul (memory.size) (i32.const 65536))))
      (if (i32.eq (memory.grow (i32.const 1)) (i32.const -1)) (then unreachable))
      (br $grow)))
    (local.get $ret))
  (func (export "ownaudit:adapter/convert@0.1.0#to-sarif")
    (param i32 i32 i32 i32 i32 i32 i32 i32 i32 i32 i32) (result i32)
    {body}
    (i32.store8 (i32.const 16) (i32.const {disc}))
    (i32.store (i32.const 20) (i32.const 65536))
    (i32.store (i32.const 24) (i32.const {len}))
    (i32.const 16))
)"#,
        heap = 65536 + len + 8,
        data = wat_bytes(output),
    )
}

pub fn adapter_component(output: &[u8], err: bool, body: &str) -> Vec<u8> {
    component_from_core(&adapter_core(output, err, body), None, "adapter")
}
