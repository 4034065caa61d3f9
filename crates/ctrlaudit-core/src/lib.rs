//! ctrlaudit-core: what every lens shares and nothing of how a lens looks: the rule registry, `Finding`,
//! `Note`, the policy of levels, `ctrlaudit.toml`, durations and the guarded file read. No async runtime,
//! no Kubernetes client, no parser: `cargo tree -p ctrlaudit-core` keeps it so (tests/layers.rs).

pub mod config;
pub mod duration;
pub mod finding;
pub mod note;
pub mod policy;
pub mod regular_file;
pub mod rules;

pub use note::Note;
