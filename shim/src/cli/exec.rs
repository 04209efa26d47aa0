//! `exec`: flags parsed and checked here; the process is built by
//! `container::exec`.

use std::collections::HashMap;

use super::args::Exec;
use crate::container::bundle::real_id;
use crate::container::{ExecOptions, Runtime};
use crate::error::{Failure, Result};

pub fn run(rt: &Runtime, args: Exec) -> Result<i32> {
    if args.process.is_none() && args.command.is_empty() {
        return Err(Failure::usage(
            "exec needs a command after the container id, or --process FILE",
        ));
    }
    if let Some(p) = &args.process {
        let text = sandboy_spec_gen::input::read_bytes(p, sandboy_spec_gen::input::TEXT_MAX, 0)
            .map_err(|e| Failure::config(format!("--process {}: {e}", p.display())))?;
        serde_json::from_slice::<oci_spec::runtime::Process>(&text).map_err(|e| {
            Failure::config(format!(
                "{}:{}:{}: invalid process.json: {e}",
                p.display(),
                e.line(),
                e.column()
            ))
        })?;
    }
    let (uid, gid) = parse_user(args.user.as_deref())?;
    check_flags(&args)?;
    let env: HashMap<String, String> = args
        .env
        .iter()
        .map(|kv| match kv.split_once('=') {
            Some((k, v)) => Ok((k.to_owned(), v.to_owned())),
            None => Err(Failure::usage(format!("--env {kv:?}: expected KEY=VALUE"))),
        })
        .collect::<Result<_>>()?;

    rt.exec(
        &args.container_id,
        ExecOptions {
            process: args.process,
            command: args.command,
            detach: args.detach,
            pid_file: args.pid_file,
            console_socket: args.console_socket,
            cwd: args.cwd,
            env,
            uid,
            gid,
            additional_gids: args.additional_gids,
            cap: args.cap,
            no_new_privs: args.no_new_privs,
            preserve_fds: args.preserve_fds,
            apparmor: args.apparmor,
            process_label: args.process_label,
            ignore_paused: args.ignore_paused,
            cgroup: args.cgroup,
        },
    )
}

fn parse_user(user: Option<&str>) -> Result<(Option<u32>, Option<u32>)> {
    let Some(user) = user else {
        return Ok((None, None));
    };
    let bad = || Failure::usage(format!("--user {user:?}: expected UID[:GID] as numbers"));
    let (u, g) = match user.split_once(':') {
        Some((u, g)) => (u, Some(g)),
        None => (user, None),
    };
    let id = |s: &str| {
        let id = s.parse().map_err(|_| bad())?;
        real_id(id).map_err(|why| Failure::usage(format!("--user {user:?}: {why}")))
    };
    let uid = id(u)?;
    let gid = g.map(id).transpose()?;
    Ok((Some(uid), gid))
}

/// What libcontainer would take without a word: a capability name it
/// cannot parse is dropped, a relative cwd resolved against whatever the
/// init's cwd is.
fn check_flags(args: &Exec) -> Result<()> {
    for gid in &args.additional_gids {
        real_id(*gid).map_err(|why| Failure::usage(format!("--additional-gids {why}")))?;
    }
    if let Some(c) = args
        .cap
        .iter()
        .find(|c| crate::init::privilege::named(c).is_none())
    {
        return Err(Failure::usage(format!(
            "--cap {c:?} is not a capability; give a name such as CAP_NET_BIND_SERVICE (man 7 capabilities)"
        )));
    }
    if let Some(cwd) = args.cwd.as_ref().filter(|c| !c.is_absolute()) {
        return Err(Failure::usage(format!(
            "--cwd {:?} must be an absolute path in the container, e.g. /work",
            cwd.display().to_string()
        )));
    }
    Ok(())
}
