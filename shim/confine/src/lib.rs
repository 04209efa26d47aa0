//! Confinement (placeholder, being written).
