//! `Note`: what a run could not look at, reported beside the findings by every lens.

/// Something that could not be looked at (a skipped file, an unobservable evidence source): always shown.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize, schemars::JsonSchema)]
pub struct Note {
    pub subject: String,
    pub message: String,
}
