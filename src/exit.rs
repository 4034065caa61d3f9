//! How a command ended, and the documented exit code of each ending. Commands return a [`Status`] or a
//! [`Failure`]; only `main.rs` turns them into a process status and prints the error.

use std::fmt;

/// How a command ended: 0 clean, 1 findings at or above `--fail-on`, 2 usage or input error, 3 the
/// evidence could not be gathered (or a bench run was cut short).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Status {
    Clean,
    Findings,
    Usage,
    NoEvidence,
}

impl Status {
    /// The process exit code, as documented in `--help` and README.
    pub const fn code(self) -> u8 {
        match self {
            Status::Clean => 0,
            Status::Findings => 1,
            Status::Usage => 2,
            Status::NoEvidence => 3,
        }
    }
}

/// A command that could not do its job: what went wrong and which exit status it ends with. Any
/// `anyhow::Error` converts to a usage or input error (exit 2); the lenses say [`Failure::no_evidence`]
/// where the cluster, not the user's input, was the problem.
#[derive(Debug)]
pub struct Failure {
    pub status: Status,
    pub error: anyhow::Error,
}

impl Failure {
    /// Bad arguments or input (exit 2).
    pub fn usage(error: impl Into<anyhow::Error>) -> Self {
        Self {
            status: Status::Usage,
            error: error.into(),
        }
    }

    /// The cluster could not be observed or measured (exit 3).
    pub fn no_evidence(error: impl Into<anyhow::Error>) -> Self {
        Self {
            status: Status::NoEvidence,
            error: error.into(),
        }
    }
}

impl<E: Into<anyhow::Error>> From<E> for Failure {
    fn from(error: E) -> Self {
        Self::usage(error)
    }
}

impl fmt::Display for Failure {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{:#}", self.error)
    }
}

/// What a command returns.
pub type Outcome = Result<Status, Failure>;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn codes_are_the_documented_ones() {
        let codes: Vec<u8> = [
            Status::Clean,
            Status::Findings,
            Status::Usage,
            Status::NoEvidence,
        ]
        .iter()
        .map(|s| s.code())
        .collect();
        assert_eq!(codes, [0, 1, 2, 3]);
        let f: Failure = anyhow::anyhow!("bad flag").into();
        assert_eq!(f.status, Status::Usage);
        assert_eq!(
            Failure::no_evidence(anyhow::anyhow!("x")).status,
            Status::NoEvidence
        );
    }
}
