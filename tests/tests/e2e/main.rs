//! augur's end-to-end tests: one integration-test binary (`cargo test -p augur-tests`). The CLI
//! is tested from the `augur-cli` package (`cli/tests/cli/`), where Cargo builds the binary.
//!
//! Tests that need the shared SuiteSparse matrices (`../shared/matrices` beside the repository, or
//! `$AUGUR_SHARED_MATRICES`) print why and return when they are absent.

mod cpu_kernels;
mod features;
mod fetch;
mod generators;
mod mtx_errors;
mod mtx_load;
mod mtx_semantics;
mod shapes;
