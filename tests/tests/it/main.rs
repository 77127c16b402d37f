//! End-to-end tests of benchstream against real servers, one binary for the whole
//! workspace (`cargo test -p benchstream-tests`), one module per area.
//!
//! Every test starts its own servers through [`benchstream_tests::harness`]; none depends
//! on a service started by hand. Needs `deploy/local/install.sh` to have run.

mod analysis;
mod cluster;
mod common;
mod fleet;
mod harness_smoke;
mod llm;
mod otlp;
mod runner;
mod services;
mod sink;
