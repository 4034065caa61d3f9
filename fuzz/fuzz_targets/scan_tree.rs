//! A whole tree through `scan`'s file-system entry point: files, FIFOs, symlinks (to other entries, to
//! `/dev/zero`, dangling, in loops), sparse files up to 4 GB and directories, under the names scan treats
//! specially (`Cargo.toml`, `Cargo.lock`, `src/*.rs`, CRD YAML). Built in a temporary directory per input, so
//! that what in-memory targets never reach (file types, sizes, the walk, the manifest and lockfile readers, the
//! CRD-context pass) is exercised. Nothing may block, crash or read past the size cap.
#![no_main]
use arbitrary::Arbitrary;
use ctrlaudit::config::Config;
use ctrlaudit::policy::Policy;
use ctrlaudit::scan::{ScanOptions, scan};
use libfuzzer_sys::fuzz_target;

const NAMES: &[&str] = &[
    "Cargo.toml",
    "Cargo.lock",
    "src/lib.rs",
    "src/main.rs",
    "src/controller.rs",
    "src/crd.rs",
    "src/sub/mod.rs",
    "crds/widget.yaml",
    "examples/e.rs",
    "member/Cargo.toml",
    "member/src/lib.rs",
];

#[derive(Debug, Arbitrary)]
enum Kind {
    Text(String),
    Bytes(Vec<u8>),
    Fifo,
    /// To another entry's name (by index), which may be a directory, itself, or missing.
    Link(u8),
    DevZero,
    /// A sparse file of up to 4 GiB: its size is all there is.
    Sparse(u32),
    Dir,
}

#[derive(Debug, Arbitrary)]
struct Entry {
    name: u8,
    kind: Kind,
}

fuzz_target!(|entries: Vec<Entry>| {
    let Ok(dir) = tempfile::tempdir() else { return };
    let root = dir.path();
    for e in entries.iter().take(16) {
        let path = root.join(NAMES[usize::from(e.name) % NAMES.len()]);
        if let Some(parent) = path.parent() {
            let _ = std::fs::create_dir_all(parent);
        }
        if path.exists() || path.symlink_metadata().is_ok() {
            continue;
        }
        let _ = match &e.kind {
            Kind::Text(t) => std::fs::write(&path, t),
            Kind::Bytes(b) => std::fs::write(&path, b),
            Kind::Fifo => std::process::Command::new("mkfifo")
                .arg(&path)
                .status()
                .map(|_| ()),
            Kind::Link(i) => std::os::unix::fs::symlink(
                root.join(NAMES[usize::from(*i) % NAMES.len()]),
                &path,
            ),
            Kind::DevZero => std::os::unix::fs::symlink("/dev/zero", &path),
            Kind::Sparse(len) => {
                std::fs::File::create(&path).and_then(|f| f.set_len(u64::from(*len)))
            }
            Kind::Dir => std::fs::create_dir_all(&path),
        };
    }
    let config = Config::default();
    let opts = ScanOptions {
        paths: vec![root.to_path_buf()],
        policy: Policy::from_config(&config),
        config,
        threads: Some(1),
        deps: false,
    };
    let _ = scan(&opts);
});
