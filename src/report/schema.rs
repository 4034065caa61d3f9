//! The JSON schemas the repository publishes under `schemas/`: `-o json`'s document and `ctrlaudit.toml`, generated
//! from the types that write and read them so that they cannot drift (`tests/schemas.rs` compares the files).

use serde_json::Value;

/// A published schema: its path in the repository and the function that generates it.
#[derive(Debug, Clone, Copy)]
pub struct Published {
    pub path: &'static str,
    pub generate: fn() -> Value,
}

/// Every schema the repository publishes.
pub const PUBLISHED: &[Published] = &[
    Published {
        path: "schemas/report.schema.json",
        generate: report,
    },
    Published {
        path: "schemas/ctrlaudit.toml.schema.json",
        generate: config,
    },
];

/// The schema of the `-o json` document of scan and live.
pub fn report() -> Value {
    schemars::schema_for!(super::json::Document<'static>).to_value()
}

/// The schema of `ctrlaudit.toml` (as its TOML reads in JSON terms), for editors such as Taplo (Even Better TOML).
pub fn config() -> Value {
    schemars::schema_for!(crate::config::Config).to_value()
}

/// A schema as the published file holds it: pretty JSON and a final newline.
pub fn to_file_text(schema: &Value) -> anyhow::Result<String> {
    use anyhow::Context;
    let mut text = serde_json::to_string_pretty(schema).context("serializing a schema")?;
    text.push('\n');
    Ok(text)
}
