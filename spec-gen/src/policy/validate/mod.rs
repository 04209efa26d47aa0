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
    let process = process::check(root.section(d, "process"), d);
    let limits = limits::check(root.section(d, "limits"), d);
    let wasm = limits::wasm(root.table(d, "wasm"), d);
    let ignore = meta::context(root.section(d, "context"), d);
    root.finish(d);
    Policy {
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
        args: process.args,
        cwd: process.cwd,
        env: process.env,
        uid: process.uid,
        gid: process.gid,
        user_set: process.user_set,
        memory: limits.memory,
        pids: limits.pids,
        cpus: limits.cpus,
        nofile: limits.nofile,
        timeout: limits.timeout,
        disk: limits.disk,
        inodes: limits.inodes,
        wasm,
        ignore,
    }
}
