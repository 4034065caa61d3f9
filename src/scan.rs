//! scan: the `ctrlaudit-scan` crate (static analysis, no cluster) and the command that runs it.

pub use ctrlaudit_scan::*;

pub mod command;
