//! OCI-wasm host (placeholder, being written).
