//! augur's end-to-end tests: one integration-test binary (`cargo test -p augur-tests`).
//!
//! Tests that need the shared SuiteSparse matrices (`../shared/matrices` beside the repository, or
//! `$AUGUR_SHARED_MATRICES`) print why and return when they are absent.

mod cli;
mod common;
mod cpu_kernels;
mod generators;
mod mtx_errors;
mod mtx_load;
mod mtx_semantics;
