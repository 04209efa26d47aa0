//! Provides a thin wrapper around fork syscall,
//! with enums and functions specific to youki implemented

pub mod args;
pub mod channel;
pub mod container_intermediate_process;
pub mod container_main_process;
pub mod cpu_affinity;
mod fork;
pub mod init;
pub mod intel_rdt;
pub mod memory_policy;
mod message;
#[cfg(feature = "libseccomp")]
mod seccomp_listener;
