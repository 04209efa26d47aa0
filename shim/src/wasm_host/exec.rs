//! The init's side: what the runtime hands over for an OCI-wasm payload
//! (the host binary's fd, the compiled code's fd, the limits), the one
//! Landlock rule that lets the confined init execute the host, and the
//! `execveat` itself, after Landlock, seccomp and the fd sweep.

use std::cell::RefCell;
use std::ffi::CString;
use std::fs::File;
use std::os::fd::{AsFd, AsRawFd, OwnedFd};
use std::os::unix::fs::FileExt;
use std::path::Path;
use std::sync::Arc;

use nix::fcntl::{fcntl, AtFlags, FcntlArg, FdFlag};
use oci_spec::runtime::Spec;
use sandboy_wasm_contract::host::{Command, Run, HOST_BIN};

use super::Exe;

/// An OCI-wasm payload on its way to the host. Cheap to clone.
#[derive(Clone, Debug)]
pub struct Payload {
    exe: Exe,
    /// The compile-cache entry (or the `.wasm` itself) opened at create;
    /// `None` when create could not reach the file (not a plain file in
    /// the rootfs, e.g. on a bind mount): then the init opens it.
    code: RefCell<Option<Arc<OwnedFd>>>,
    /// SHA-256 (hex) of the wasm bytes, which a cache entry must name.
    sha256: Option<String>,
    /// The `dev.sandboy.wasm.limits` value, already checked.
    limits: String,
}

impl Payload {
    pub fn new(exe: Exe, code: Option<File>, sha256: Option<String>, limits: String) -> Self {
        Payload {
            exe,
            code: RefCell::new(code.map(|f| Arc::new(OwnedFd::from(f)))),
            sha256,
            limits,
        }
    }

    /// In `validate` (inside the container, before the confinement): opens
    /// a payload create could not, refusing what is not WebAssembly.
    pub fn open_inside(&self, args0: &str) -> Result<(), String> {
        if self.code.borrow().is_some() {
            return Ok(());
        }
        // Never blocking: the payload's path is the container's to plant.
        let file =
            crate::host::open_regular(Path::new(args0)).map_err(|e| format!("{args0}: {e}"))?;
        let mut head = [0u8; 8];
        let wasm = file.read_exact_at(&mut head, 0).is_ok()
            && sandboy_wasm_contract::encoding(&head).is_some();
        if !wasm {
            return Err(format!(
                "{args0}: not a WebAssembly module or component (bad magic/version header)"
            ));
        }
        *self.code.borrow_mut() = Some(Arc::new(OwnedFd::from(file)));
        Ok(())
    }

    /// Lets the confinement execute the host binary, and nothing beside it.
    pub fn allow(&self, c: &sandboy_confine::Confinement) -> Result<(), String> {
        c.allow_executing(self.exe.fd())
            .map_err(|e| format!("confinement: {e}"))
    }

    /// In `exec`, after the confinement: `execveat` the host with the
    /// process's args, env and cwd. Returns only on failure.
    pub fn exec(&self, id: &str, spec: &Spec) -> String {
        match self.try_exec(id, spec) {
            Ok(never) => match never {},
            Err(e) => {
                tracing::warn!(%id, error = %e, "the wasm host could not be started");
                format!("wasm host: {e}")
            }
        }
    }

    fn try_exec(&self, id: &str, spec: &Spec) -> Result<std::convert::Infallible, String> {
        let code = self
            .code
            .borrow()
            .clone()
            .ok_or("no payload fd (validate did not run)")?;
        let log = sandboy_wasm_contract::log::handoff();
        // Both survive the execve; the fd sweep made everything else
        // close-on-exec.
        for fd in std::iter::once(code.as_raw_fd()).chain(log.fd) {
            fcntl(fd, FcntlArg::F_SETFD(FdFlag::empty()))
                .map_err(|e| format!("keeping fd {fd} across exec: {e}"))?;
        }
        let process = spec.process().as_ref();
        let args = process.and_then(|p| p.args().clone()).unwrap_or_default();
        let (path, rest) = args.split_first().ok_or("process.args is empty")?;
        let run = Command::Run(Run {
            id: id.to_string(),
            code_fd: code.as_raw_fd(),
            sha256: self.sha256.clone(),
            path: path.clone(),
            limits: self.limits.clone(),
            cwd: process.map_or_else(|| Path::new("/").to_path_buf(), |p| p.cwd().clone()),
            log,
            args: rest.to_vec(),
        });
        let cstrings = |v: Vec<String>| {
            v.into_iter()
                .map(CString::new)
                .collect::<Result<Vec<_>, _>>()
                .map_err(|e| format!("argument with a NUL byte: {e}"))
        };
        let argv = cstrings(
            std::iter::once(HOST_BIN.to_string())
                .chain(run.to_args())
                .collect(),
        )?;
        let env = cstrings(process.and_then(|p| p.env().clone()).unwrap_or_default())?;
        nix::unistd::execveat(
            Some(self.exe.fd().as_fd().as_raw_fd()),
            c"",
            &argv,
            &env,
            AtFlags::AT_EMPTY_PATH,
        )
        .map_err(|e| {
            let refused = matches!(e, nix::errno::Errno::EACCES | nix::errno::Errno::EPERM);
            format!(
                "execveat of {HOST_BIN}: {e}{}",
                if refused {
                    " (refused by the container's seccomp profile: execveat must be allowed)"
                } else {
                    ""
                }
            )
        })
    }
}
