//! Phases: which variant of an enum a function sets a `phase`/`state` field to, and whether a call made in the
//! match arm of one phase moves the object out of it.

/// A phase or state field set to an enum variant: `phase: Some(Phase::Running)`, `status.state = State::Ready`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PhaseSet {
    /// The variant, as `Type::Variant`.
    pub to: String,
    /// Set outside any `if`/`match` branch of its function and before any `return`: every call of the function
    /// sets it.
    pub unconditional: bool,
}

/// Whether setting the phase to `to` (`Type::Variant`) moves an object matched by the arm `arm` (see
/// [`CallCtx::phase_arm`]) out of it: the arm matches variants of the same enum, and not `to`. The next pass then
/// takes another arm, so what ran on the way is a transition step, not the steady state.
pub fn leaves_phase(arm: &[String], to: &str) -> bool {
    arm.iter()
        .any(|v| v.contains("::") && enum_of(v) == enum_of(to))
        && !arm.iter().any(|v| v == to)
}

/// The enum of a `Type::Variant` (see [`PhaseSet::to`]).
pub fn enum_of(v: &str) -> &str {
    v.split("::").next().unwrap_or(v)
}
