//! Semantic checks, one module per table. Each check reads its table
//! through [`Table`], reports every problem it finds into [`Diags`] and
//! returns what it could make of the rest, so one run reports all errors.

mod fs;
mod limits;
mod meta;
mod mount;
mod net;
mod process;
mod syscalls;
mod values;

use std::path::Path;

use toml::de::DeTable;
use toml::Spanned;

use super::diags::Diags;
use super::reader::Table;
use super::{sha256_hex, Policy};
use values::{duration, size};

/// What a check needs besides the text: where mount sources resolve and
/// the name to use when the policy has none.
pub(crate) struct Context<'c> {
    pub base_dir: &'c Path,
    pub default_name: &'c str,
    pub bytes: &'c [u8],
}

/// Check the whole document; problems go to `d`.
pub(crate) fn policy(doc: &Spanned<DeTable>, cx: &Context, d: &mut Diags) -> Policy {
    let mut root = Table::root(doc);
    meta::version(&mut root, d);
    let name = meta::name(&mut root, d, cx.default_name);
    let landlock_mode = meta::landlock(root.section(d, "landlock"), d);
    let fs = fs::check(root.section(d, "fs"), d);
    let mounts = mount::check(root.tables(d, "mount"), d, cx.base_dir);
    fs::check_writes(d, &fs.write_at, &mounts);
    let net = net::check(root.section(d, "net"), d);
    let sys = syscalls::check(root.section(d, "syscalls"), d);
    let mut process_table = root.section(d, "process");
    let args = process::args(&mut process_table, d);
    let cwd = process::cwd(&mut process_table, d);
    let env = process::env(&mut process_table, d);
    let (uid, gid, user_set) = process::user(&mut process_table, d);
    let userns = process::userns(&mut process_table, d, (uid, gid), net.egress.is_active());
    process_table.finish(d);
    let mut limits_table = root.section(d, "limits");
    let wasm = limits::wasm(root.table(d, "wasm"), d);
    let ignore = meta::context(root.section(d, "context"), d);
    // Diagnostics are sorted by position, so reading the limits inside the
    // literal reports the same as reading them up front (the keys are asked
    // in the same order, which the unknown-key hint lists).
    let policy = Policy {
        file: d.file().to_string(),
        name,
        sha256: sha256_hex(cx.bytes),
        landlock_mode,
        read: fs.read,
        exec: fs.exec,
        write: fs.write,
        hide: fs.hide,
        relative: fs.relative,
        mounts,
        net_namespace: net.namespace,
        connect: net.connect,
        bind: net.bind,
        udp: net.udp,
        unix: net.unix,
        egress: net.egress,
        scope: net.scope,
        default_deny: sys.default_deny,
        deny: sys.deny,
        action: sys.action,
        args,
        cwd,
        env,
        uid,
        gid,
        user_set,
        userns,
        memory: limits::memory(&mut limits_table, d),
        pids: limits::pids(&mut limits_table, d),
        cpus: limits::cpus(&mut limits_table, d),
        nofile: limits::nofile(&mut limits_table, d),
        timeout: duration(&mut limits_table, d, "timeout"),
        disk: size(&mut limits_table, d, "disk"),
        inodes: limits::inodes(&mut limits_table, d),
        wasm,
        ignore,
    };
    limits_table.finish(d);
    root.finish(d);
    policy
}
