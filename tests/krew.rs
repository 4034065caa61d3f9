//! The krew plugin manifest (`plugins/ctrlaudit.yaml`, written by release/package.sh) has the structure krew's
//! `v1alpha2` Plugin requires: its name matches the file, the version matches Cargo.toml, and every platform has a
//! selector, an https archive of this version, a sha256 and the binary among the files it installs.
#![allow(clippy::unwrap_used)]

use std::path::PathBuf;
use yaml_serde::Value;

fn manifest() -> (String, Value) {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("plugins/ctrlaudit.yaml");
    let stem = path.file_stem().unwrap().to_str().unwrap().to_string();
    let text = std::fs::read_to_string(&path).unwrap();
    (stem, yaml_serde::from_str(&text).unwrap())
}

fn s<'a>(v: &'a Value, what: &str) -> &'a str {
    v.as_str()
        .unwrap_or_else(|| panic!("{what} is not a string: {v:?}"))
}

#[test]
fn the_krew_manifest_is_a_valid_plugin_for_this_version() {
    let (stem, m) = manifest();
    assert_eq!(
        s(&m["apiVersion"], "apiVersion"),
        "krew.googlecontainertools.github.com/v1alpha2"
    );
    assert_eq!(s(&m["kind"], "kind"), "Plugin");
    let name = s(&m["metadata"]["name"], "metadata.name");
    assert_eq!(
        name, stem,
        "krew requires the file to be named after the plugin"
    );
    assert!(
        name.bytes().all(|b| b.is_ascii_lowercase() || b == b'-'),
        "{name}"
    );
    let spec = &m["spec"];
    let version = s(&spec["version"], "spec.version");
    assert_eq!(version, format!("v{}", env!("CARGO_PKG_VERSION")));
    assert!(s(&spec["homepage"], "homepage").starts_with("https://"));
    let short = s(&spec["shortDescription"], "shortDescription");
    assert!(!short.is_empty() && short.len() <= 50, "{short}");
    assert!(!s(&spec["description"], "description").trim().is_empty());

    let platforms = spec["platforms"].as_sequence().expect("platforms");
    assert!(!platforms.is_empty());
    let mut seen = Vec::new();
    for p in platforms {
        let labels = &p["selector"]["matchLabels"];
        let os = s(&labels["os"], "os");
        let arch = s(&labels["arch"], "arch");
        assert!(matches!(os, "linux" | "darwin" | "windows"), "{os}");
        assert!(matches!(arch, "amd64" | "arm64"), "{arch}");
        assert!(!seen.contains(&(os, arch)), "{os}/{arch} twice");
        seen.push((os, arch));
        let uri = s(&p["uri"], "uri");
        assert!(
            uri.starts_with("https://") && uri.ends_with(".tar.gz"),
            "{uri}"
        );
        assert!(
            uri.contains(&format!("/{version}/")),
            "{uri} is not the {version} release"
        );
        let sha = s(&p["sha256"], "sha256");
        assert!(
            sha.len() == 64
                && sha
                    .bytes()
                    .all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b)),
            "sha256 {sha:?}"
        );
        let bin = s(&p["bin"], "bin");
        assert_eq!(bin, "kubectl-ctrlaudit");
        let files = p["files"].as_sequence().expect("files");
        assert!(
            files.iter().any(|f| f["from"].as_str() == Some(bin)),
            "the binary is not installed: {files:?}"
        );
    }
    assert!(seen.contains(&("linux", "amd64")));
}
