//! bench: built-in good/bad controller variants run against a cluster (the harness arrives with the bench issue).

pub mod widget;
