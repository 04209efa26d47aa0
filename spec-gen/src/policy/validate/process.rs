//! `[process]`: what runs, where and as whom. The table is optional
//! (`sandboy wrap` supplies argv); `generate` checks for args at render time.
//! Each key is read by one function, straight into [`Policy`](super::Policy)'s
//! fields.

use toml::Spanned;

use super::super::diags::Diags;
use super::super::reader::Table;
use super::super::DEFAULT_PATH;
use super::values::absolute;

/// `cwd`: absolute, `/` when absent.
pub(super) fn cwd(t: &mut Table, d: &mut Diags) -> String {
    t.str(d, "cwd")
        .and_then(|c| absolute(d, &c, "process.cwd"))
        .unwrap_or_else(|| "/".into())
}

/// `user` as `(uid, gid, written)`: root's ids when absent or invalid,
/// `written` whether the key was there at all.
pub(super) fn user(t: &mut Table, d: &mut Diags) -> (u32, u32, bool) {
    let written = t.str(d, "user");
    let user_set = written.is_some();
    let (uid, gid) = written.and_then(|u| uid_gid(d, &u)).unwrap_or((0, 0));
    (uid, gid, user_set)
}

/// `userns`: whether `generate` maps container root into a user namespace
/// (absent: where the bundle allows it, see `crate::userns`). `true` with
/// ids outside the mapped range is refused here, where its span is known.
pub(super) fn userns(
    t: &mut Table,
    d: &mut Diags,
    (uid, gid): (u32, u32),
    egress: bool,
) -> Option<bool> {
    let v = t.bool(d, "userns")?;
    let size = crate::userns::SIZE;
    if *v.get_ref() && egress {
        d.error(
            v.span(),
            "process.userns",
            "the egress gateway ([net] allow) binds its resolver files from the runtime's private state directory, which a mapped root cannot reach",
            "drop userns = true (the container keeps host ids), or the [net] allow rules",
        );
    }
    if *v.get_ref() && (uid >= size || gid >= size) {
        d.error(
            v.span(),
            "process.userns",
            format!(
                "the process runs as {uid}:{gid}, outside the {size} ids a user namespace maps"
            ),
            "choose a [process] user below 65536, or set userns = false to run with host ids",
        );
    }
    Some(*v.get_ref())
}

pub(super) fn args(t: &mut Table, d: &mut Diags) -> Vec<String> {
    let Some(list) = t.strs(d, "args") else {
        return Vec::new();
    };
    match list.get_ref().first() {
        None => d.error(
            list.span(),
            "process.args",
            "empty argument list",
            "give the command to run, e.g. args = [\"/bin/sh\", \"-c\", \"make test\"], or drop the key to take it from sandboy wrap or --base",
        ),
        Some(first) if first.get_ref().is_empty() => d.error(
            first.span(),
            "process.args",
            "empty program name",
            "args[0] is the program to run, e.g. \"/bin/sh\"",
        ),
        Some(_) => {}
    }
    list.get_ref()
        .iter()
        .map(|a| a.get_ref().to_string())
        .collect()
}

pub(super) fn env(t: &mut Table, d: &mut Diags) -> Vec<String> {
    let mut env = Vec::new();
    for e in t
        .strs(d, "env")
        .map(Spanned::into_inner)
        .unwrap_or_default()
    {
        let s = *e.get_ref();
        match s.split_once('=') {
            Some((k, _)) if !k.is_empty() && !k.contains(char::is_whitespace) => {
                env.push(s.to_string())
            }
            _ => d.error(
                e.span(),
                "process.env",
                format!("environment entry {s:?} is not KEY=VALUE"),
                "write entries as \"KEY=VALUE\", e.g. \"CI=true\"",
            ),
        }
    }
    if !env.iter().any(|e| e.starts_with("PATH=")) {
        env.insert(0, DEFAULT_PATH.to_string());
    }
    env
}

fn uid_gid(d: &mut Diags, u: &Spanned<&str>) -> Option<(u32, u32)> {
    let parsed = u
        .get_ref()
        .split_once(':')
        .and_then(|(a, b)| Some((a.parse::<u32>().ok()?, b.parse::<u32>().ok()?)));
    if parsed.is_none() {
        d.error(
            u.span(),
            "process.user",
            format!("invalid user {:?}", u.get_ref()),
            "write numeric \"uid:gid\", e.g. \"1000:1000\" (names are not resolved)",
        );
    }
    parsed
}
