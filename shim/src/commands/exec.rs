use std::collections::HashMap;

use libcontainer::container::builder::ContainerBuilder;
use libcontainer::syscall::syscall::SyscallType;
use nix::sys::wait::waitpid;

use crate::cli::Exec;
use crate::commands::exit_status;
use crate::error::{Failure, Result};
use crate::executor::SandboyExecutor;
use crate::ops::{require, Runtime};

pub fn run(rt: &Runtime, args: Exec) -> Result<i32> {
    let c = rt.load(&args.container_id)?;
    let paused = c.status() == libcontainer::container::ContainerStatus::Paused;
    require(&c, c.can_exec() || (args.ignore_paused && paused), "exec")?;
    if args.process.is_none() && args.command.is_empty() {
        return Err(Failure::usage(
            "exec needs a command after the container id, or --process FILE",
        ));
    }
    if let Some(p) = &args.process {
        let text = std::fs::read(p)
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
    let env: HashMap<String, String> = args
        .env
        .iter()
        .map(|kv| match kv.split_once('=') {
            Some((k, v)) => Ok((k.to_owned(), v.to_owned())),
            None => Err(Failure::usage(format!("--env {kv:?}: expected KEY=VALUE"))),
        })
        .collect::<Result<_>>()?;

    // The exec'd process gets the init's confinement; without the spec it
    // cannot, so exec is refused rather than run unconfined.
    let init_spec = oci_spec::runtime::Spec::load(c.bundle().join("config.json")).map_err(|e| {
        Failure::runtime(format!(
            "exec: cannot read the container's config.json to confine the new process: {e}"
        ))
    })?;
    // Without --process, the new process gets the init's capability sets,
    // including any the init held only to confine itself: drop those too,
    // unless asked for with --cap.
    let held = if args.process.is_some() {
        Vec::new()
    } else {
        let asked: Vec<oci_spec::runtime::Capability> =
            args.cap.iter().filter_map(|c| c.parse().ok()).collect();
        crate::privilege::read_held(c.bundle())
            .into_iter()
            .filter(|h| !asked.contains(h))
            .collect()
    };
    // As runc: without --user / --additional-gids the new process runs as
    // the container's user (libcontainer alone would make it root).
    let spec_user = init_spec.process().as_ref().map(|p| p.user().clone());
    let uid = uid.or(spec_user.as_ref().map(|u| u.uid()));
    let gid = gid.or(spec_user.as_ref().map(|u| u.gid()));
    let additional_gids = if args.additional_gids.is_empty() {
        spec_user
            .as_ref()
            .and_then(|u| u.additional_gids().clone())
            .unwrap_or_default()
    } else {
        args.additional_gids
    };
    let notify = crate::seccomp_notify::Channel::open(&init_spec)?;
    let bundle = crate::ops::bundle_of(&c);
    let pid = ContainerBuilder::new(args.container_id.clone(), SyscallType::default())
        .with_executor(
            SandboyExecutor::for_tenant(&args.container_id, args.preserve_fds, &init_spec)
                .with_held(held)
                .with_notify(
                    notify
                        .as_ref()
                        .map(|n| n.target(&args.container_id, &bundle, &init_spec)),
                ),
        )
        .with_root_path(&rt.root)?
        .with_console_socket(args.console_socket.as_ref())
        .with_pid_file(args.pid_file.as_ref())?
        .with_preserved_fds(args.preserve_fds)
        .as_tenant()
        .with_detach(args.detach)
        .with_cwd(args.cwd.as_ref())
        .with_env(env)
        .with_process(args.process.as_ref())
        .with_no_new_privs(args.no_new_privs)
        .with_container_args(args.command)
        .with_additional_gids(additional_gids)
        .with_user(uid)
        .with_group(gid)
        .with_capabilities(args.cap)
        .with_ignore_paused(args.ignore_paused)
        .with_sub_cgroup(args.cgroup)
        .with_apparmor(args.apparmor)
        .with_process_label(args.process_label)
        .build()?;
    if args.detach {
        return Ok(0);
    }
    Ok(exit_status(waitpid(pid, None)?))
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
    let uid = u.parse().map_err(|_| bad())?;
    let gid = g.map(|g| g.parse().map_err(|_| bad())).transpose()?;
    Ok((Some(uid), gid))
}
