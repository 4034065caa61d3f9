//! The benchmark's Widget custom resource (placeholder until testenv defines it).
