//! What runs inside the container's init (and every `exec`'d process) after
//! libcontainer has built the namespaces and the rootfs: sandboy's executor
//! applies Landlock, seccomp and the fd sweep, then execs the payload or
//! hands it to the WebAssembly host. `privilege` holds the capabilities the
//! init needs only to confine itself; `seccomp_notify` passes a listener fd
//! to the engine's agent.

pub mod executor;
pub mod privilege;
pub mod seccomp_notify;
