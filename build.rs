//! Build metadata for `--version`: the commit and its date when built from a git checkout ("unknown" from a
//! crate package), and the Kubernetes API version k8s-openapi was built for (its build script publishes it to
//! the crates that depend on it directly, as `links` metadata).

use std::process::Command;

fn git(args: &[&str]) -> Option<String> {
    let out = Command::new("git").args(args).output().ok()?;
    let text = String::from_utf8_lossy(&out.stdout).trim().to_string();
    (out.status.success() && !text.is_empty()).then_some(text)
}

fn main() {
    let commit = git(&["rev-parse", "--short=12", "HEAD"]).unwrap_or_else(|| "unknown".into());
    let date = git(&["log", "-1", "--format=%cs"]).unwrap_or_else(|| "unknown".into());
    // `(1 << 16) | (minor << 8)`, under DEP_K8S_OPENAPI_<version>_VERSION.
    let k8s = std::env::vars()
        .find(|(k, _)| k.starts_with("DEP_K8S_OPENAPI_") && k.ends_with("_VERSION"))
        .and_then(|(_, v)| v.parse::<u32>().ok())
        .map_or_else(|| "unknown".into(), |v| format!("1.{}", (v >> 8) & 0xff));
    println!("cargo:rustc-env=CTRLAUDIT_COMMIT={commit}");
    println!("cargo:rustc-env=CTRLAUDIT_COMMIT_DATE={date}");
    println!("cargo:rustc-env=CTRLAUDIT_K8S_API={k8s}");
    // A new commit moves HEAD or the branch it names; outside a checkout there is nothing to watch.
    if let Ok(head) = std::fs::read_to_string(".git/HEAD") {
        println!("cargo:rerun-if-changed=.git/HEAD");
        if let Some(branch) = head.trim().strip_prefix("ref: ") {
            println!("cargo:rerun-if-changed=.git/{branch}");
        }
        println!("cargo:rerun-if-changed=.git/packed-refs");
    } else {
        println!("cargo:rerun-if-changed=build.rs");
    }
}
