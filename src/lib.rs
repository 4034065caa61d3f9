//! kubectl-ctrlaudit: finds Kubernetes controller anti-patterns in source (scan), on a cluster (live), and measures their cost (bench).

pub mod bench;
pub mod cli;
pub mod complete;
pub mod connect;
pub mod demo;
pub mod endpoint;
pub mod exit;
pub mod fetch;
pub mod live;
pub mod output;
pub mod report;
pub mod scan;

// The shared core, at the paths the rest of the crate and its users have always named.
pub use ctrlaudit_core::{config, duration, finding, policy, regular_file, rules};
