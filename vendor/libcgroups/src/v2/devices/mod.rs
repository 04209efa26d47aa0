pub mod bpf;
pub mod controller;
pub mod emulator;
pub mod program;

#[cfg(test)]
#[allow(clippy::too_many_arguments)]
pub mod mocks;

pub use controller::Devices;
