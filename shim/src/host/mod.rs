//! Protections of the host against the runtime's own containers that are not
//! about one container: the sealed copy of the runtime binary
//! (CVE-2019-5736).

pub mod sealed_exe;
