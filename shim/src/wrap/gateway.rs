//! The namespaces tier's egress gateway (`[net] allow`, docs/egress.md):
//! the supervisor's gateway, with the watchdog as its supervisor.
//!
//! The step has its own network namespace with only loopback. The first
//! child makes it (`namespaces::enter`), binds the gateway's sockets there
//! before anything of the step runs ([`Listeners::bind`]; it holds every
//! capability of its new user namespace, so port 53 and allowed ports
//! below 1024 bind) and passes them to the watchdog over a socket pair
//! (SCM_RIGHTS), keeping no copy. A socket keeps the namespace it was made
//! in: the watchdog, in the caller's network namespace, hands them to a
//! gateway process of its own, forked and confined as the supervisor's is
//! ([`child::spawn`] with [`Identity::Caller`]: the user's ids, no
//! capabilities, Landlock and seccomp), which accepts what the step
//! connects and connects upstream from the host; the watchdog settles its
//! refusals (client lookup, warn events, the report) on a thread. It
//! serves until the step has ended: the watchdog then kills its
//! descendants, this process included.

use std::io::{IoSlice, IoSliceMut};
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd, RawFd};
use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc::{Receiver, Sender};
use std::sync::Arc;

use nix::poll::{poll, PollFd, PollFlags, PollTimeout};

use nix::sys::socket::{
    recvmsg, sendmsg, socketpair, AddressFamily, ControlMessage, ControlMessageOwned, MsgFlags,
    SockFlag, SockType,
};
use sandboy_spec_gen::policy::{Egress, NetNamespace, Policy};

use crate::container::Ran;
use crate::error::{Failure, Result};
use crate::supervisor::denials::{Collector, Denial};
use crate::supervisor::egress::child::{self, Identity};
use crate::supervisor::egress::Listeners;

/// Fds per message (below the kernel's SCM_MAX_FD, 253).
const CHUNK: usize = 64;

/// The gateway to be: its rules and the socket pair its sockets cross.
pub struct Plan {
    rules: Egress,
    proxy_port: u16,
    watchdog: OwnedFd,
    child: OwnedFd,
}

impl Plan {
    /// The plan for a policy with `[net] allow`/`allow_cidr`; `None`
    /// without them. Made before the fork.
    pub fn new(policy: &Policy) -> Result<Option<Plan>> {
        if !policy.egress.is_active() {
            return Ok(None);
        }
        if policy.net_namespace != NetNamespace::None {
            // The policy checker refuses this; never serve a shared network.
            return Err(Failure::config(format!(
                "{}: [net] allow/allow_cidr need the step's own network namespace",
                policy.file
            )));
        }
        let (watchdog, child) = socketpair(
            AddressFamily::Unix,
            SockType::SeqPacket,
            None,
            SockFlag::SOCK_CLOEXEC,
        )
        .map_err(|e| Failure::runtime(format!("egress gateway: socketpair: {e}")))?;
        Ok(Some(Plan {
            rules: policy.egress.clone(),
            proxy_port: policy.egress.proxy_port(),
            watchdog,
            child,
        }))
    }

    /// In the first child, inside the step's new network namespace (lo
    /// up): bind every socket and pass them to the watchdog. This process
    /// keeps none of them, nor its ends of the pair: the watchdog reads
    /// until end of file.
    pub fn bind_and_send(self) -> std::io::Result<()> {
        let fds = Listeners::bind(&self.rules, self.proxy_port)?.into_fds();
        for chunk in fds.chunks(CHUNK) {
            let raw: Vec<RawFd> = chunk.iter().map(|f| f.as_raw_fd()).collect();
            sendmsg::<()>(
                self.child.as_raw_fd(),
                &[IoSlice::new(&[0])],
                &[ControlMessage::ScmRights(&raw)],
                MsgFlags::empty(),
                None,
            )?;
        }
        Ok(())
    }

    /// In the watchdog, after the fork: the sockets of `step` (the first
    /// child, whose network namespace they are in), served from here.
    /// Fails when the child sent fewer than the rules need (it failed and
    /// said why).
    pub fn serve(self, id: &str, step: i32) -> Result<Gateway> {
        let Plan {
            rules,
            watchdog,
            child,
            ..
        } = self;
        drop(child);
        let fds = receive(&watchdog)
            .and_then(|fds| Listeners::from_fds(&rules, fds))
            .map_err(|e| {
                Failure::runtime(format!(
                    "egress gateway: the step's sockets did not arrive: {e}"
                ))
            })?;
        // Served by a confined process of its own (`egress::child`): the
        // watchdog settles its refusals (the client lookup) on a thread.
        let process = child::spawn(rules, fds, Identity::Caller).map_err(|e| {
            Failure::runtime(format!(
                "egress gateway: its process could not be started: {e}"
            ))
        })?;
        let (tx, rx) = std::sync::mpsc::channel();
        let stop = Arc::new(AtomicBool::new(false));
        let pump = {
            let (stop, id) = (stop.clone(), id.to_string());
            std::thread::spawn(move || pump(process, &id, step, &tx, &stop))
        };
        Ok(Gateway {
            refusals: rx,
            collector: Collector::in_memory(id),
            pump: Some((stop, pump)),
        })
    }
}

/// Settle what the gateway's process sends until `stop`; then kill and
/// reap it and settle the rest.
fn pump(mut process: child::Gateway, id: &str, step: i32, tx: &Sender<Denial>, stop: &AtomicBool) {
    let send = |d: Denial| {
        let _ = tx.send(d);
    };
    while !stop.load(Ordering::SeqCst) {
        let mut fds: Vec<PollFd> = process
            .fd()
            .map(|fd| PollFd::new(fd, PollFlags::POLLIN))
            .into_iter()
            .collect();
        let _ = poll(&mut fds, PollTimeout::from(100u8));
        process.pump(id, step, send);
    }
    process.stop(id, step, send);
}

/// Every fd sent until the other end closed.
fn receive(fd: &OwnedFd) -> std::io::Result<Vec<OwnedFd>> {
    let mut out = Vec::new();
    loop {
        let mut byte = [0u8; 1];
        let mut iov = [IoSliceMut::new(&mut byte)];
        let mut space = nix::cmsg_space!([RawFd; CHUNK]);
        let msg = match recvmsg::<()>(
            fd.as_raw_fd(),
            &mut iov,
            Some(&mut space),
            MsgFlags::MSG_CMSG_CLOEXEC,
        ) {
            Ok(m) => m,
            Err(nix::errno::Errno::EINTR) => continue,
            Err(e) => return Err(e.into()),
        };
        for c in msg.cmsgs()? {
            if let ControlMessageOwned::ScmRights(fds) = c {
                // SAFETY: the kernel just installed these fds in this
                // process (SCM_RIGHTS); nothing else owns them.
                out.extend(fds.into_iter().map(|f| unsafe { OwnedFd::from_raw_fd(f) }));
            }
        }
        if msg.bytes == 0 {
            return Ok(out);
        }
    }
}

/// The gateway being served: its refusals, collected as the supervisor
/// collects them (one entry per distinct refusal, counted).
pub struct Gateway {
    refusals: Receiver<Denial>,
    /// The thread settling the gateway process's refusals, and its stop.
    pump: Option<(Arc<AtomicBool>, std::thread::JoinHandle<()>)>,
    collector: Collector,
}

impl Gateway {
    /// Once the step has ended: its refusals in the wrap's result, and the
    /// report (`--report`, written even when empty, as `run` does).
    pub fn finish(mut self, status: i32, report: Option<&Path>) -> Result<Ran> {
        if let Some((stop, pump)) = self.pump.take() {
            stop.store(true, Ordering::SeqCst);
            let _ = pump.join();
        }
        for d in self.refusals.try_iter() {
            self.collector.record(d);
        }
        if let Some(to) = report {
            crate::host::output::replace(to, self.collector.jsonl().as_bytes(), 0o600)
                .map_err(|e| Failure::runtime(format!("--report {}: {e}", to.display())))?;
        }
        Ok(Ran {
            status,
            refusals: self.collector.denials().to_vec(),
        })
    }
}
