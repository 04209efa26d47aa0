//! Shared harness for the integration suites (being written).
