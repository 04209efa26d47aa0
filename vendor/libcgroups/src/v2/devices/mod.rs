pub mod bpf;
pub mod controller;
pub mod emulator;
pub mod program;

pub use controller::Devices;
