//! kubectl-ctrlaudit: finds Kubernetes controller anti-patterns in source (scan), on a cluster (live) and measures their cost (bench).
