//! Protections of the host against the runtime's own containers that are not
//! about one container: the sealed copy of the runtime binary
//! (CVE-2019-5736), and the files written for the caller after a container
//! ran, which never follow a link it planted.

/// The writer that never follows a planted link (spec-gen's, shared).
pub use sandboy_spec_gen::output;
pub mod sealed_exe;
