//! The demo's control plane without Go: controller-tools' envtest archive (kube-apiserver and etcd, the
//! archives setup-envtest fetches), at a pinned version, verified against a pinned sha512 before anything is
//! unpacked, and cached per version and platform. Building from the Go module proxy stays as the fallback.

use std::io::{Read, Write};
use std::path::{Path, PathBuf};
use std::time::Duration;

use anyhow::{Context, Result, anyhow, bail};
use sha2::{Digest, Sha512};

/// The envtest release the demo downloads: the Kubernetes minor of k8s-openapi's feature (v1_34) and of the
/// Go-built testenv (`testenv/versions.sh`, which pins a later patch release that envtest does not publish).
pub const VERSION: &str = "v1.34.1";

/// Where controller-tools publishes the archives (GitHub release assets; the download follows the redirect).
const RELEASES: &str = "https://github.com/kubernetes-sigs/controller-tools/releases/download";

/// The sha512 of each `envtest-v1.34.1-{os}-{arch}.tar.gz`, as controller-tools' `envtest-releases.yaml`
/// (the index setup-envtest reads) publishes them. A platform without a pin has no download: it builds.
const PINS: &[(&str, &str)] = &[
    (
        "linux-amd64",
        "c5e7c237ae18a8c65d0df1214b864ecd19aa9ff4f1383dbd477c202546d778c0f74efe15750ec38f57d8de26ba17cd62f404446cdd3c975399a5d4589de35cdd",
    ),
    (
        "linux-arm64",
        "bf13d2456183e66d084e28e1c9eed6a408fb77a06d8d1fd0461a7d9bc0c90b63d29ea67870b28f80d1f992acb026007d6f43987753c859c81d6a78bc1ca2c903",
    ),
    (
        "darwin-amd64",
        "d9e0464dc1708c36ab41147b5e364c8b8e201eafc14c299dcbe58ebeaa82c651b8e834647167a951ded8c6d08c616aadbae1673a54743f9c8fa15a278c78c0c0",
    ),
    (
        "darwin-arm64",
        "43d7c10b74100d20044df7c73be03e26f8243a9cb7c1d3035e581ee7bb0c7ffcaf759b9e182186b5bb2f47d1608835414ca443181a02d9ecb6c9cf04b43e3809",
    ),
];

/// An index in `envtest-releases.yaml`'s format (a mirror of the archives, or a test's local server) instead of
/// the pins and GitHub: its hashes are trusted as the pins are, since the user chose it.
pub const INDEX_ENV: &str = "CTRLAUDIT_ENVTEST_INDEX";

/// The archives are ~60 MB; anything past this is not an envtest archive.
const MAX_ARCHIVE: u64 = 512 << 20;

/// The two binaries the demo runs.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Binaries {
    pub kube_apiserver: PathBuf,
    pub etcd: PathBuf,
}

/// What to download and the sha512 it must have.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Archive {
    pub name: String,
    pub url: String,
    pub sha512: String,
}

/// envtest's name for this machine (`linux-amd64`, `darwin-arm64`, …), as in its archive names.
pub fn platform() -> String {
    platform_of(std::env::consts::OS, std::env::consts::ARCH)
}

fn platform_of(os: &str, arch: &str) -> String {
    let os = match os {
        "macos" => "darwin",
        other => other,
    };
    let arch = match arch {
        "x86_64" => "amd64",
        "aarch64" => "arm64",
        "powerpc64" => "ppc64le",
        other => other,
    };
    format!("{os}-{arch}")
}

fn archive_name(platform: &str) -> String {
    format!("envtest-{VERSION}-{platform}.tar.gz")
}

/// The pinned archive for `platform`, if controller-tools publishes one that we pinned.
pub fn pinned(platform: &str) -> Option<Archive> {
    let (_, sha512) = PINS.iter().find(|(p, _)| *p == platform)?;
    let name = archive_name(platform);
    Some(Archive {
        url: format!("{RELEASES}/envtest-{VERSION}/{name}"),
        name,
        sha512: (*sha512).to_string(),
    })
}

#[derive(Debug, serde::Deserialize)]
struct Index {
    releases: std::collections::BTreeMap<String, std::collections::BTreeMap<String, IndexEntry>>,
}

#[derive(Debug, serde::Deserialize)]
struct IndexEntry {
    hash: String,
    #[serde(rename = "selfLink")]
    self_link: String,
}

/// The archive for `platform` in an `envtest-releases.yaml` index; a relative `selfLink` is resolved against
/// the index's own URL, as a mirror on a plain file server writes it.
pub fn from_index(text: &str, index_url: &str, platform: &str) -> Result<Archive> {
    let index: Index = yaml_serde::from_str(text)
        .context("the index is not in envtest-releases.yaml's format (releases: version: archive: {hash, selfLink})")?;
    let name = archive_name(platform);
    let release = index
        .releases
        .get(VERSION)
        .with_context(|| format!("the index has no release {VERSION}"))?;
    let entry = release
        .get(&name)
        .with_context(|| format!("the index's release {VERSION} has no {name}"))?;
    let url = if entry.self_link.contains("://") {
        entry.self_link.clone()
    } else {
        let base = index_url
            .rsplit_once('/')
            .map_or(index_url, |(base, _)| base);
        format!("{base}/{}", entry.self_link.trim_start_matches('/'))
    };
    let sha512 = entry.hash.trim().to_ascii_lowercase();
    if sha512.len() != 128 || !sha512.bytes().all(|b| b.is_ascii_hexdigit()) {
        bail!(
            "the index's hash for {name} is not a sha512 in hex: {:?}",
            entry.hash
        );
    }
    Ok(Archive { name, url, sha512 })
}

/// The cache directory of this version and platform: present only when complete (written aside, renamed).
fn dir(cache: &Path, platform: &str) -> PathBuf {
    cache.join(format!("envtest-{VERSION}-{platform}"))
}

fn binaries_in(dir: &Path) -> Binaries {
    Binaries {
        kube_apiserver: dir.join(exe("kube-apiserver")),
        etcd: dir.join(exe("etcd")),
    }
}

fn exe(name: &str) -> String {
    format!("{name}{}", std::env::consts::EXE_SUFFIX)
}

/// The binaries of an earlier download, if the cache holds them.
pub fn cached(cache: &Path) -> Option<Binaries> {
    let b = binaries_in(&dir(cache, &platform()));
    (b.kube_apiserver.is_file() && b.etcd.is_file()).then_some(b)
}

/// Downloads, verifies and unpacks this platform's archive into the cache (the index of [`INDEX_ENV`] when
/// set, else the pins), showing progress on stderr.
pub fn fetch(cache: &Path) -> Result<Binaries> {
    let platform = platform();
    let agent = agent();
    let archive = match std::env::var(INDEX_ENV) {
        Ok(index_url) if !index_url.is_empty() => {
            let text = get_text(&agent, &index_url)
                .with_context(|| format!("reading the envtest index {index_url} ({INDEX_ENV})"))?;
            from_index(&text, &index_url, &platform)
                .with_context(|| format!("in the envtest index {index_url} ({INDEX_ENV})"))?
        }
        _ => pinned(&platform).with_context(|| {
            format!(
                "controller-tools publishes no envtest archive for {platform} that this build pins"
            )
        })?,
    };
    eprintln!("demo: control plane: downloading {} …", archive.url);
    let tmp = cache.join(format!("{}.part.{}", archive.name, std::process::id()));
    let result = download(&agent, &archive, &tmp).and_then(|()| install(&tmp, cache, &platform));
    let _ = std::fs::remove_file(&tmp);
    result.with_context(|| format!("fetching {}", archive.url))
}

fn agent() -> ureq::Agent {
    ureq::Agent::config_builder()
        .timeout_connect(Some(Duration::from_secs(30)))
        // A slow link gets its ten minutes; a stalled one does not hang the demo.
        .timeout_global(Some(Duration::from_secs(600)))
        .user_agent(concat!("kubectl-ctrlaudit/", env!("CARGO_PKG_VERSION")))
        .build()
        .into()
}

fn get_text(agent: &ureq::Agent, url: &str) -> Result<String> {
    let mut resp = agent
        .get(url)
        .call()
        .map_err(|e| anyhow!("GET {url}: {e}"))?;
    resp.body_mut()
        .with_config()
        .limit(16 << 20)
        .read_to_string()
        .map_err(|e| anyhow!("reading {url}: {e}"))
}

/// Streams the archive to `to`, hashing as it goes; a wrong hash leaves nothing behind.
fn download(agent: &ureq::Agent, archive: &Archive, to: &Path) -> Result<()> {
    let mut resp = agent
        .get(&archive.url)
        .call()
        .map_err(|e| anyhow!("GET {}: {e}", archive.url))?;
    let total = resp.body().content_length();
    let mut reader = resp.body_mut().with_config().limit(MAX_ARCHIVE).reader();
    let mut file =
        std::fs::File::create(to).with_context(|| format!("creating {}", to.display()))?;
    let bar = progress(total);
    let mut hasher = Sha512::new();
    let mut buf = vec![0u8; 1 << 16];
    loop {
        let n = reader
            .read(&mut buf)
            .map_err(|e| anyhow!("reading {}: {e}", archive.url))?;
        if n == 0 {
            break;
        }
        hasher.update(&buf[..n]);
        file.write_all(&buf[..n])
            .with_context(|| format!("writing {}", to.display()))?;
        if let Some(b) = &bar {
            b.inc(n as u64);
        }
    }
    if let Some(b) = bar {
        b.finish_and_clear();
    }
    file.sync_all()
        .with_context(|| format!("writing {}", to.display()))?;
    let got = hex(&hasher.finalize());
    if got != archive.sha512 {
        bail!(
            "{} has sha512 {got}, not the pinned {}: not unpacked",
            archive.name,
            archive.sha512
        );
    }
    Ok(())
}

/// Lower-case hex of a digest.
pub(super) fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

fn progress(total: Option<u64>) -> Option<indicatif::ProgressBar> {
    use std::io::IsTerminal;
    if !std::io::stderr().is_terminal() {
        return None;
    }
    let bar = indicatif::ProgressBar::new(total.unwrap_or(0));
    bar.set_style(
        indicatif::ProgressStyle::with_template("{bar:30} {bytes}/{total_bytes} {bytes_per_sec}")
            .unwrap_or_else(|_| indicatif::ProgressStyle::default_bar()),
    );
    Some(bar)
}

/// Unpacks kube-apiserver and etcd (and nothing else: entry paths never choose where a file goes) from the
/// verified archive into the cache, aside first and renamed whole.
fn install(archive: &Path, cache: &Path, platform: &str) -> Result<Binaries> {
    let dest = dir(cache, platform);
    let tmp = cache.join(format!(
        "envtest-{VERSION}-{platform}.tmp.{}",
        std::process::id()
    ));
    let result = unpack(archive, &tmp).and_then(|()| match std::fs::rename(&tmp, &dest) {
        Ok(()) => Ok(()),
        // Another demo installed the same archive first.
        Err(_) if cached(cache).is_some() => Ok(()),
        Err(e) => Err(e).with_context(|| format!("moving {} to {}", tmp.display(), dest.display())),
    });
    let _ = std::fs::remove_dir_all(&tmp);
    result?;
    eprintln!(
        "demo: control plane: envtest {VERSION} in {}",
        dest.display()
    );
    Ok(binaries_in(&dest))
}

fn unpack(archive: &Path, to: &Path) -> Result<()> {
    std::fs::create_dir_all(to).with_context(|| format!("creating {}", to.display()))?;
    let file =
        std::fs::File::open(archive).with_context(|| format!("opening {}", archive.display()))?;
    let mut tar = tar::Archive::new(flate2::read::GzDecoder::new(file));
    let wanted = [exe("kube-apiserver"), exe("etcd")];
    let mut found = Vec::new();
    for entry in tar.entries().context("reading the archive")? {
        let mut entry = entry.context("reading the archive")?;
        if !entry.header().entry_type().is_file() {
            continue;
        }
        let path = entry.path().context("an entry's path")?.into_owned();
        let Some(name) = path.file_name().and_then(|n| n.to_str()) else {
            continue;
        };
        let Some(w) = wanted.iter().find(|w| *w == name) else {
            continue;
        };
        let out = to.join(w);
        let mut f =
            std::fs::File::create(&out).with_context(|| format!("creating {}", out.display()))?;
        std::io::copy(&mut entry, &mut f)
            .with_context(|| format!("unpacking {}", path.display()))?;
        set_executable(&out)?;
        found.push(w.clone());
    }
    let missing: Vec<&String> = wanted.iter().filter(|w| !found.contains(w)).collect();
    if !missing.is_empty() {
        bail!("the archive has no {missing:?}");
    }
    Ok(())
}

#[cfg(unix)]
fn set_executable(p: &Path) -> Result<()> {
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(p, std::fs::Permissions::from_mode(0o755))
        .with_context(|| format!("making {} executable", p.display()))
}

#[cfg(not(unix))]
fn set_executable(_: &Path) -> Result<()> {
    Ok(())
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    #[test]
    fn platforms_are_named_as_envtest_names_them() {
        assert_eq!(platform_of("linux", "x86_64"), "linux-amd64");
        assert_eq!(platform_of("macos", "aarch64"), "darwin-arm64");
        let a = pinned("linux-amd64").unwrap();
        assert_eq!(a.name, "envtest-v1.34.1-linux-amd64.tar.gz");
        assert!(
            a.url
                .ends_with("/envtest-v1.34.1/envtest-v1.34.1-linux-amd64.tar.gz")
        );
        assert_eq!(a.sha512.len(), 128);
        assert!(pinned("freebsd-riscv64").is_none());
    }

    #[test]
    fn an_index_gives_the_archive_and_its_hash() {
        let hash = "ab".repeat(64);
        let text = format!(
            "releases:\n  v1.34.1:\n    envtest-v1.34.1-linux-amd64.tar.gz:\n      hash: {hash}\n      selfLink: files/a.tgz\n  v1.33.0: {{}}\n"
        );
        let a = from_index(&text, "http://127.0.0.1:9/x/index.yaml", "linux-amd64").unwrap();
        assert_eq!(a.url, "http://127.0.0.1:9/x/files/a.tgz");
        assert_eq!(a.sha512, hash);
        let e = from_index(&text, "http://h/i.yaml", "darwin-arm64").unwrap_err();
        assert!(
            format!("{e:#}").contains("has no envtest-v1.34.1-darwin-arm64.tar.gz"),
            "{e:#}"
        );
        let bad = text.replace(&hash, "1234");
        let e = from_index(&bad, "http://h/i.yaml", "linux-amd64").unwrap_err();
        assert!(format!("{e:#}").contains("not a sha512"), "{e:#}");
        let e = from_index("releases: [1]", "http://h/i.yaml", "linux-amd64").unwrap_err();
        assert!(
            format!("{e:#}").contains("envtest-releases.yaml's format"),
            "{e:#}"
        );
    }

    fn tar_gz(entries: &[(&str, &[u8])]) -> Vec<u8> {
        let gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
        let mut b = tar::Builder::new(gz);
        for (path, data) in entries {
            let mut h = tar::Header::new_gnu();
            h.set_size(data.len() as u64);
            h.set_mode(0o644);
            h.set_cksum();
            b.append_data(&mut h, path, *data).unwrap();
        }
        b.into_inner().unwrap().finish().unwrap()
    }

    #[test]
    fn only_the_two_binaries_are_unpacked_and_both_must_be_there() {
        let tmp = tempfile::tempdir().unwrap();
        let archive = tmp.path().join("a.tar.gz");
        std::fs::write(
            &archive,
            tar_gz(&[
                ("controller-tools/envtest/kube-apiserver", b"api"),
                ("controller-tools/envtest/etcd", b"etcd"),
                ("controller-tools/envtest/kubectl", b"kubectl"),
            ]),
        )
        .unwrap();
        let cache = tmp.path().join("cache");
        std::fs::create_dir(&cache).unwrap();
        let b = install(&archive, &cache, &platform()).unwrap();
        assert_eq!(std::fs::read(&b.etcd).unwrap(), b"etcd");
        assert_eq!(std::fs::read(&b.kube_apiserver).unwrap(), b"api");
        assert_eq!(cached(&cache), Some(b.clone()));
        let names: Vec<_> = std::fs::read_dir(b.etcd.parent().unwrap())
            .unwrap()
            .map(|e| e.unwrap().file_name())
            .collect();
        assert_eq!(names.len(), 2, "{names:?}");

        std::fs::write(
            &archive,
            tar_gz(&[("controller-tools/envtest/kube-apiserver", b"api")]),
        )
        .unwrap();
        let other = tmp.path().join("other");
        std::fs::create_dir(&other).unwrap();
        let e = install(&archive, &other, &platform()).unwrap_err();
        assert!(format!("{e:#}").contains("no [\"etcd\"]"), "{e:#}");
        assert!(cached(&other).is_none());
        assert_eq!(std::fs::read_dir(&other).unwrap().count(), 0, "left behind");
    }
}
