//! Poststop hooks, run by sandboy rather than libcontainer.
//!
//! libcontainer 0.7 runs them with `?` between removing the cgroup and
//! removing the state dir: one failing hook leaves a container that can never
//! be deleted, and skips the hooks after it. The runtime spec (and runc) say:
//! warn and carry on. So [`take`] moves them out of the saved config before
//! the delete and [`run`] runs them after it, each on its own.

use libcontainer::config::YoukiConfig;
use libcontainer::container::Container;
use oci_spec::runtime::Hook;

/// The poststop hooks of a container's saved config.
pub fn of(cfg: &YoukiConfig) -> Vec<Hook> {
    cfg.hooks
        .as_ref()
        .and_then(|h| h.poststop().clone())
        .unwrap_or_default()
}

/// Take the poststop hooks out of the container's saved config, so that
/// libcontainer's delete does not run them.
pub fn take(c: &Container, mut cfg: YoukiConfig) -> Vec<Hook> {
    let poststop = of(&cfg);
    let Some(hooks) = cfg.hooks.as_mut().filter(|_| !poststop.is_empty()) else {
        return Vec::new();
    };
    hooks.set_poststop(None);
    match cfg.save(&c.root) {
        Ok(()) => poststop,
        // Not saved: libcontainer still has them and runs them itself.
        Err(_) => Vec::new(),
    }
}

/// A failed delete keeps the container; its poststop hooks must still run
/// when it finally goes.
pub fn restore(c: &Container, poststop: Vec<Hook>) {
    if poststop.is_empty() {
        return;
    }
    if let Ok(mut cfg) = YoukiConfig::load(&c.root) {
        if let Some(hooks) = cfg.hooks.as_mut() {
            hooks.set_poststop(Some(poststop));
            let _ = cfg.save(&c.root);
        }
    }
}

pub fn run(c: &Container, poststop: &[Hook]) {
    for hook in poststop {
        let mut one = vec![hook.clone()];
        // As runc: a hook without env inherits the runtime's (see `compat`).
        if hook.env().is_none() {
            one[0].set_env(Some(super::compat::runtime_env()));
        }
        if let Err(e) = libcontainer::hooks::run_hooks(Some(&one), Some(&c.state), None, None, None)
        {
            tracing::warn!(
                id = c.id(),
                hook = %hook.path().display(),
                "poststop hook failed: {e}; the container is deleted anyway"
            );
        }
    }
}
