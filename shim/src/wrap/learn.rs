//! `sandboy wrap --learn OUT.toml [--policy BASE.toml] -- CMD`: run the
//! command observed rather than confined, and write the policy under which
//! it would run (`supervisor::learn`: the filter, the observation and the
//! policy writer, shared with `run --learn` of a bundle).
//!
//! No Landlock, no namespaces, no root needed: seccomp under no_new_privs
//! is allowed to any user (as root the command runs as the sudo caller,
//! else nobody, as plain root `wrap` runs it), and the watcher is the command's parent, so it
//! may read its memory (`process_vm_readv`) even under Yama's ptrace
//! scope 1.

use std::ffi::CString;
use std::os::fd::{AsRawFd, OwnedFd};
use std::path::Path;
use std::sync::Mutex;

use nix::sys::socket::{socketpair, AddressFamily, SockFlag, SockType};
use nix::sys::wait::{waitpid, WaitStatus};
use nix::unistd::{fork, ForkResult};

use crate::error::{Failure, Result};
use crate::supervisor::learn::{self, notify, observed::Observed, Learn, Origin, Root};
use crate::supervisor::unotify;

/// Run `command` observed and write the policy; the command's exit status.
pub fn run(learn: &Learn, base: Option<&Path>, command: &[String]) -> Result<i32> {
    let base_text = learn::base_text(base)?;
    let filter = notify::filter().map_err(|e| Failure::runtime(format!("learn: filter: {e}")))?;
    let argv: Vec<CString> = command
        .iter()
        .map(|a| CString::new(a.as_bytes()))
        .collect::<std::result::Result<_, _>>()
        .map_err(|_| Failure::usage("arguments may not contain NUL"))?;
    let (ours, theirs) = socketpair(
        AddressFamily::Unix,
        SockType::Stream,
        None,
        SockFlag::SOCK_CLOEXEC,
    )?;
    // As root, the command runs as plain root `wrap` would run it: the sudo
    // caller, else nobody (learning observes, it does not confine: a red
    // team's `sudo sandboy wrap --learn` step read /etc/shadow as root).
    let identity = nix::unistd::geteuid().is_root().then(|| {
        let var = |k: &str| std::env::var(k).ok();
        let id = super::identity::caller(var("SUDO_UID").as_deref(), var("SUDO_GID").as_deref());
        (id.uid, id.gid)
    });
    // SAFETY: wrap is single-threaded here; the child only drops its ids,
    // installs the filter, passes its listener and execs (or exits).
    let child = match unsafe { fork() }? {
        ForkResult::Parent { child } => child,
        ForkResult::Child => {
            drop(ours);
            child_exec(&filter, &theirs, &argv, identity)
        }
    };
    drop(theirs);
    let listener = unotify::receive_listener(&ours);
    let seen = Mutex::new(Observed::default());
    if let Some(l) = &listener {
        notify::serve(l, Root::Host, &seen);
    }
    let status = match waitpid(child, None)? {
        WaitStatus::Exited(_, c) => c,
        WaitStatus::Signaled(_, s, _) => 128 + s as i32,
        _ => 1,
    };
    if listener.is_none() {
        return Err(Failure::runtime(
            "learn: the command's seccomp listener never arrived; nothing was learned",
        ));
    }
    let origin = Origin {
        how: "sandboy wrap --learn",
        what: learn::quoted(command),
        status: Some(status),
        root: Root::Host,
        hidden: Vec::new(),
    };
    let seen = seen.into_inner().unwrap_or_else(|e| e.into_inner());
    learn::write_policy(learn, base_text.as_deref(), &origin, &seen)?;
    Ok(status)
}

/// In the child: no_new_privs, the notifying filter, its listener to the
/// parent, then execvp. Never returns.
fn child_exec(
    filter: &sandboy_confine::CompiledSeccomp,
    to_parent: &OwnedFd,
    argv: &[CString],
    identity: Option<(u32, u32)>,
) -> ! {
    let fail = |msg: String, code: i32| -> ! {
        crate::error::print_line(&format!("sandboy: {msg}"));
        // SAFETY: _exit is always sound.
        unsafe { libc::_exit(code) }
    };
    let _ = nix::sys::prctl::set_pdeathsig(nix::sys::signal::Signal::SIGKILL);
    if let Some((uid, gid)) = identity {
        use nix::unistd::{setgroups, setresgid, setresuid, Gid, Uid};
        let (uid, gid) = (Uid::from_raw(uid), Gid::from_raw(gid));
        if let Err(e) = setgroups(&[])
            .and_then(|()| setresgid(gid, gid, gid))
            .and_then(|()| setresuid(uid, uid, uid))
        {
            fail(format!("error: learn: dropping to uid {uid}: {e}"), 1);
        }
    }
    if let Err(e) = nix::sys::prctl::set_no_new_privs() {
        fail(format!("error: prctl(PR_SET_NO_NEW_PRIVS): {e}"), 1);
    }
    if let Err(e) = unotify::install_and_send(filter, to_parent.as_raw_fd()) {
        fail(format!("error: learn: {e}"), 1);
    }
    let err = nix::unistd::execvp(&argv[0], argv).unwrap_err();
    let code = if err == nix::errno::Errno::ENOENT {
        127
    } else {
        126
    };
    fail(format!("{}: {err}", argv[0].to_string_lossy()), code)
}
