//! kubectl-ctrlaudit: finds Kubernetes controller anti-patterns in source (scan), on a cluster (live), and measures their cost (bench).

pub mod bench;
pub mod cli;
pub mod config;
pub mod connect;
pub mod demo;
pub mod duration;
pub mod endpoint;
pub mod exit;
pub mod fetch;
pub mod finding;
pub mod live;
pub mod output;
pub mod policy;
pub mod regular_file;
pub mod report;
pub mod rules;
pub mod scan;
