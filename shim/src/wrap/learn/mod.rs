//! `sandboy wrap --learn OUT.toml [--policy BASE.toml] -- CMD`: run the
//! command observed rather than confined, and write the policy under which
//! it would run.
//!
//! The command runs under one seccomp filter that sends its path and port
//! syscalls (open*, exec*, connect, bind, unlink*, rename*, mkdir*, …) to
//! this process as user notifications (`notify`); each call's path or
//! address is read from the caller's memory and the call proceeds
//! unchanged. No Landlock, no namespaces, no root needed: seccomp under
//! no_new_privs is allowed to any user, and the watcher is the command's
//! ancestor, so it may read its memory (`process_vm_readv`) even under
//! Yama's ptrace scope 1. When every observed process has exited the
//! listener hangs up, and the accesses become a policy (`observed`).

mod notify;
mod observed;

use std::ffi::CString;
use std::os::fd::{AsRawFd, OwnedFd};
use std::path::{Path, PathBuf};

use nix::sys::socket::{socketpair, AddressFamily, SockFlag, SockType};
use nix::sys::wait::{waitpid, WaitStatus};
use nix::unistd::{fork, ForkResult};

use super::unotify;
use crate::error::{Failure, Result};

/// What `--learn` was asked.
#[derive(Debug, Clone)]
pub struct Learn {
    /// Where the learned policy goes.
    pub out: PathBuf,
    /// Path components kept (`--collapse DEPTH`; 0 keeps whole paths).
    pub depth: usize,
}

/// Run `command` observed and write the policy; the command's exit status.
pub fn run(learn: &Learn, base: Option<&Path>, command: &[String]) -> Result<i32> {
    let base_text = base
        .map(|b| {
            sandboy_spec_gen::Policy::load(b).map_err(|e| Failure::config(e.to_string()))?;
            std::fs::read_to_string(b)
                .map_err(|e| Failure::runtime(format!("{}: {e}", b.display())))
        })
        .transpose()?;
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
    // SAFETY: wrap is single-threaded here; the child only installs the
    // filter, passes its listener and execs (or exits).
    let child = match unsafe { fork() }? {
        ForkResult::Parent { child } => child,
        ForkResult::Child => {
            drop(ours);
            child_exec(&filter, &theirs, &argv)
        }
    };
    drop(theirs);
    let listener = unotify::receive_listener(&ours);
    let mut seen = observed::Observed::default();
    if let Some(l) = &listener {
        notify::serve(l, &mut seen);
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
    write_policy(learn, base_text.as_deref(), command, &seen, status)?;
    Ok(status)
}

/// In the child: no_new_privs, the notifying filter, its listener to the
/// parent, then execvp. Never returns.
fn child_exec(
    filter: &sandboy_confine::CompiledSeccomp,
    to_parent: &OwnedFd,
    argv: &[CString],
) -> ! {
    let fail = |msg: String, code: i32| -> ! {
        let _ = std::io::Write::write_all(
            &mut std::io::stderr(),
            format!("sandboy: {msg}\n").as_bytes(),
        );
        // SAFETY: _exit is always sound.
        unsafe { libc::_exit(code) }
    };
    let _ = nix::sys::prctl::set_pdeathsig(nix::sys::signal::Signal::SIGKILL);
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

fn write_policy(
    learn: &Learn,
    base: Option<&str>,
    command: &[String],
    seen: &observed::Observed,
    status: i32,
) -> Result<()> {
    let (edits, notes) = seen.edits(learn.depth);
    for n in &notes {
        tracing::warn!(policy = %learn.out.display(), "learn: {n}");
    }
    let when = chrono::Utc::now().to_rfc3339_opts(chrono::SecondsFormat::Secs, true);
    let header = format!(
        "# Learned by `sandboy wrap --learn` at {when} from: {}\n\
         # The command exited {status}; {} calls observed; paths cut to {} components;\n\
         # protected paths never granted; the default deny list kept. Learning\n\
         # observes, it does not judge: review before use.\n",
        quoted(command),
        seen.calls,
        learn.depth,
    );
    let text = observed::policy_text(base, &edits, &header);
    // Never hand out a policy that does not load.
    let dir = learn.out.parent().unwrap_or(Path::new("."));
    sandboy_spec_gen::Policy::parse(&text, &learn.out.display().to_string(), dir).map_err(|e| {
        Failure::runtime(format!("learn: the learned policy is invalid (a bug): {e}"))
    })?;
    std::fs::write(&learn.out, text)
        .map_err(|e| Failure::runtime(format!("learn: writing {}: {e}", learn.out.display())))?;
    Ok(())
}

/// The command on one comment line: an argument with white space, quotes
/// or control characters is written as a quoted, escaped string (a
/// newline in `sh -c` would otherwise end the comment and break the TOML).
fn quoted(command: &[String]) -> String {
    command
        .iter()
        .map(|a| {
            if a.is_empty()
                || a.chars()
                    .any(|c| c.is_whitespace() || c.is_control() || c == '"')
            {
                format!("{a:?}")
            } else {
                a.clone()
            }
        })
        .collect::<Vec<_>>()
        .join(" ")
}

#[cfg(test)]
mod tests {
    #[test]
    fn a_multi_line_argument_stays_on_the_comment_line() {
        let cmd = ["python3", "-c", "import x\nprint(1)"].map(String::from);
        let line = super::quoted(&cmd);
        assert_eq!(line, r#"python3 -c "import x\nprint(1)""#);
        assert!(!line.contains('\n'));
    }
}
