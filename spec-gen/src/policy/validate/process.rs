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
    // execve takes C strings: a NUL would silently cut the argument short.
    for a in list.get_ref() {
        if a.get_ref().contains('\0') {
            d.error(
                a.span(),
                "process.args",
                format!(
                    "argument {:?} contains a NUL byte, which would cut it short",
                    a.get_ref()
                ),
                "remove the NUL (\\u0000) from the argument",
            );
        }
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
            // The container's init sets each entry with setenv, which
            // cannot carry a NUL (it panicked there, found only at start).
            _ if s.contains('\0') => d.error(
                e.span(),
                "process.env",
                format!("environment entry {s:?} contains a NUL byte, which no environment variable can hold"),
                "remove the NUL (\\u0000) from the entry",
            ),
            Some((k, _)) if !k.is_empty() && !k.contains(char::is_whitespace) => {
                env.push(s.to_string())
            }
            _ => d.error(
                e.span(),
                "process.env",
                format!("environment entry {s:?} is not KEY=VALUE"),
                "write entries as \"KEY=VALUE\" with a non-empty KEY, e.g. \"CI=true\"",
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
    let Some((uid, gid)) = parsed else {
        d.error(
            u.span(),
            "process.user",
            format!("invalid user {:?}", u.get_ref()),
            "write numeric \"uid:gid\", e.g. \"1000:1000\" (names are not resolved)",
        );
        return None;
    };
    // setresuid/setresgid take (uid_t)-1 as "leave unchanged": the step
    // would keep the runtime's ids, root.
    let what = match (uid == UNCHANGED, gid == UNCHANGED) {
        (false, false) => return Some((uid, gid)),
        (true, true) => "uid and gid 4294967295 are (uid_t)-1 and (gid_t)-1",
        (true, false) => "uid 4294967295 is (uid_t)-1",
        (false, true) => "gid 4294967295 is (gid_t)-1",
    };
    d.error(
        u.span(),
        "process.user",
        format!("{what}, which the kernel takes as 'leave unchanged': the process would keep the runtime's ids (root)"),
        "use a real id such as 65534 (nobody); ids go up to 4294967294",
    );
    None
}

/// `(uid_t)-1` / `(gid_t)-1`: "no change" to setresuid and setresgid.
const UNCHANGED: u32 = u32::MAX;

#[cfg(test)]
mod tests {
    use std::path::Path;

    use crate::Policy;

    fn parse(process: &str) -> Result<Policy, crate::Error> {
        let src = format!("version = 1\n[process]\nargs = [\"/bin/true\"]\n{process}\n");
        Policy::parse(&src, "p.toml", Path::new("/"))
    }

    /// The one diagnostic of a refused `[process]` line (line 4).
    #[track_caller]
    fn refused(process: &str, key: &str, says: &str) {
        let err = parse(process).unwrap_err();
        assert_eq!(err.exit_code(), 2);
        let d = err.diagnostics();
        assert_eq!(d.len(), 1, "{err}");
        assert_eq!(d[0].key, key, "{err}");
        assert_eq!(d[0].location.line, 4, "{err}");
        assert!(err.to_string().contains(says), "{err}");
    }

    #[test]
    fn user_minus_one_is_refused_the_id_below_allowed() {
        refused(
            "user = \"4294967295:4294967295\"",
            "process.user",
            "uid and gid 4294967295 are (uid_t)-1 and (gid_t)-1, which the kernel takes as 'leave unchanged'",
        );
        refused(
            "user = \"1000:4294967295\"",
            "process.user",
            "gid 4294967295 is (gid_t)-1, which the kernel takes as 'leave unchanged'",
        );
        refused(
            "user = \"4294967295:1000\"",
            "process.user",
            "uid 4294967295 is (uid_t)-1, which the kernel takes as 'leave unchanged'",
        );
        let err = parse("user = \"4294967295:1000\"").unwrap_err();
        assert!(err.to_string().contains("such as 65534"), "{err}");
        // With userns = false (ids this high keep host ids anyway).
        let p = parse("user = \"4294967294:4294967294\"\nuserns = false").unwrap();
        assert_eq!((p.uid, p.gid), (4294967294, 4294967294));
        let p = parse("user = \"65534:65534\"").unwrap();
        assert_eq!((p.uid, p.gid, p.user_set), (65534, 65534, true));
    }

    #[test]
    fn env_with_a_nul_or_no_name_is_refused() {
        refused("env = [\"A=x\\u0000y\"]", "process.env", "NUL byte");
        refused("env = [\"A\\u0000=x\"]", "process.env", "NUL byte");
        refused("env = [\"=x\"]", "process.env", "is not KEY=VALUE");
        refused("env = [\"NOVALUE\"]", "process.env", "is not KEY=VALUE");
        let p = parse("env = [\"A=x y\", \"EMPTY=\", \"B=a=b\"]").unwrap();
        assert!(p.env.iter().any(|e| e == "A=x y"), "{:?}", p.env);
        assert!(p.env.iter().any(|e| e == "EMPTY="), "{:?}", p.env);
        assert!(p.env.iter().any(|e| e == "B=a=b"), "{:?}", p.env);
    }

    #[test]
    fn args_with_a_nul_are_refused() {
        let src = "version = 1\n[process]\nargs = [\"/bin/echo\",\n  \"a\\u0000b\"]\n";
        let err = Policy::parse(src, "p.toml", Path::new("/")).unwrap_err();
        let d = err.diagnostics();
        assert_eq!(d.len(), 1, "{err}");
        assert_eq!((d[0].key.as_str(), d[0].location.line), ("process.args", 4));
        let src = "version = 1\n[process]\nargs = [\"/bin/echo\", \"a\\\\u0000b\"]\n";
        let p = Policy::parse(src, "p.toml", Path::new("/")).unwrap();
        assert_eq!(p.args[1], "a\\u0000b");
    }
}
