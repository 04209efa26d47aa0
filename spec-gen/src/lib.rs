//! The policy side of sandboy: the `owen.policy.toml` model, its validation,
//! rendering into an OCI `config.json`, and the annotation codec that the
//! runtime decodes. It knows nothing of the runtime itself.

pub mod annotations;
pub mod units;
pub mod syscalls;
