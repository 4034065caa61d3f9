//! The `kubectl-ctrlaudit` binary: parse args, run, map the result to an exit code.
fn main() {}
