//! Linux syscall tables (name -> number) for the architectures sandboy
//! supports. Placeholder: being written.
