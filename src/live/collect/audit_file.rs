//! Reads an audit log file (JSON lines) into an [`AuditSummary`], line by line, on a blocking thread: all at once
//! (`--offline`), or followed through the window ([`Follower`]) so that a log rotated or truncated meanwhile
//! loses nothing that was written before it.

use crate::live::audit::AuditFolder;
use crate::live::snapshot::AuditSummary;
use crate::report::Note;
use anyhow::Context;
use std::io::{BufRead, Seek};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicI64, Ordering};
use std::time::Duration;

/// The slack on both sides of the window: the log's clock and ours are taken at different points of a request.
const SLACK_MS: i64 = 1_000;
/// How often the follower looks for new lines, a rotation or a truncation.
const POLL: Duration = Duration::from_millis(250);

/// Reads `path`; with `window`, only the events whose time falls in it.
pub async fn read(
    path: &Path,
    namespace: Option<&str>,
    window: Option<(i64, i64)>,
) -> anyhow::Result<AuditSummary> {
    let path: PathBuf = path.to_path_buf();
    let namespace = namespace.map(str::to_string);
    tokio::task::spawn_blocking(move || {
        let mut folder = AuditFolder::new(&path.display().to_string(), namespace.as_deref());
        if let Some((a, b)) = window {
            folder = folder.within(a - SLACK_MS, b + SLACK_MS);
        }
        let mut file = Open::new(&path)?;
        file.drain(&mut folder)?;
        Ok(folder.finish())
    })
    .await
    .context("the audit log reader panicked")?
}

/// One open audit log: its identity on disk, where reading stopped, and the partial line after that.
struct Open {
    path: PathBuf,
    reader: std::io::BufReader<std::fs::File>,
    /// (device, inode) of the file that is open: a different one at `path` means the log was rotated.
    id: (u64, u64),
    /// Bytes consumed, complete lines only.
    pos: u64,
    partial: Vec<u8>,
    /// The file's first bytes as first read: a truncated and rewritten log has other ones, even when it has
    /// grown past `pos` again between two polls.
    head: Vec<u8>,
}

/// How many leading bytes identify a log's content (an audit event starts with its own ID and time within them).
const HEAD: usize = 256;

fn file_id(meta: &std::fs::Metadata) -> (u64, u64) {
    #[cfg(unix)]
    {
        use std::os::unix::fs::MetadataExt;
        (meta.dev(), meta.ino())
    }
    #[cfg(not(unix))]
    {
        let _ = meta;
        (0, 0)
    }
}

impl Open {
    fn new(path: &Path) -> anyhow::Result<Self> {
        let file =
            std::fs::File::open(path).with_context(|| format!("cannot open {}", path.display()))?;
        let meta = file
            .metadata()
            .with_context(|| format!("reading {}", path.display()))?;
        Ok(Self {
            path: path.to_path_buf(),
            reader: std::io::BufReader::new(file),
            id: file_id(&meta),
            pos: 0,
            partial: Vec::new(),
            head: Vec::new(),
        })
    }

    /// Folds every complete line up to the current end; a last line without its newline waits for the next
    /// call (the API server may be writing it).
    fn drain(&mut self, folder: &mut AuditFolder) -> anyhow::Result<()> {
        loop {
            let n = self
                .reader
                .read_until(b'\n', &mut self.partial)
                .with_context(|| format!("reading {}", self.path.display()))?;
            if n == 0 || !self.partial.ends_with(b"\n") {
                return Ok(());
            }
            if self.head.len() < HEAD && self.pos < HEAD as u64 {
                let take = (HEAD - self.head.len()).min(self.partial.len());
                self.head.extend_from_slice(&self.partial[..take]);
            }
            self.pos += self.partial.len() as u64;
            match std::str::from_utf8(&self.partial) {
                Ok(line) => folder.line(line),
                Err(_) => folder.malformed_line(),
            }
            self.partial.clear();
        }
    }

    /// The partial last line, folded as it is (at the very end, when nothing more will come).
    fn flush(&mut self, folder: &mut AuditFolder) {
        if !self.partial.is_empty() {
            match std::str::from_utf8(&self.partial) {
                Ok(line) => folder.line(line),
                Err(_) => folder.malformed_line(),
            }
            self.partial.clear();
        }
    }
}

/// Follows an audit log through the live window.
#[derive(Debug)]
pub struct Follower {
    end_ms: Arc<AtomicI64>,
    /// Polls done: lets a test wait for the follower to have looked, instead of sleeping.
    polls: Arc<std::sync::atomic::AtomicU64>,
    task: tokio::task::JoinHandle<anyhow::Result<(AuditSummary, Vec<Note>)>>,
}

impl Follower {
    /// Opens `path` and starts following it; events from `start_ms` (less the slack) on count.
    pub fn start(path: &Path, namespace: Option<&str>, start_ms: i64) -> anyhow::Result<Self> {
        let mut open = Open::new(path)?;
        let mut folder = AuditFolder::new(&path.display().to_string(), namespace)
            .within(start_ms - SLACK_MS, i64::MAX);
        let end_ms = Arc::new(AtomicI64::new(0));
        let end = end_ms.clone();
        let polls = Arc::new(std::sync::atomic::AtomicU64::new(0));
        let polled = polls.clone();
        let task = tokio::task::spawn_blocking(move || {
            let mut notes = Vec::new();
            loop {
                let stop_at = end.load(Ordering::Acquire);
                if stop_at != 0 {
                    folder.until(stop_at + SLACK_MS);
                }
                let stopping = stop_at != 0;
                // Rotation and truncation first: reading on from the old position of a truncated log that
                // has grown again would fold the middle of a line.
                follow_rotation(&mut open, &mut folder, &mut notes)?;
                open.drain(&mut folder)?;
                if stopping {
                    open.flush(&mut folder);
                    break;
                }
                polled.fetch_add(1, Ordering::Release);
                std::thread::sleep(POLL);
            }
            Ok((folder.finish(), notes))
        });
        Ok(Self {
            end_ms,
            polls,
            task,
        })
    }

    /// How many times it has looked at the file so far.
    pub fn polls(&self) -> u64 {
        self.polls.load(Ordering::Acquire)
    }

    /// Ends the window at `end_ms`: reads what is left and returns the summary and a note per rotation or
    /// truncation seen.
    pub async fn finish(self, end_ms: i64) -> anyhow::Result<(AuditSummary, Vec<Note>)> {
        self.end_ms.store(end_ms.max(1), Ordering::Release);
        self.task.await.context("the audit log follower panicked")?
    }
}

/// Checks `open.path` for a rotation (another file there now) or a truncation (shorter than what was read), and
/// moves on to the new content; each is noted.
fn follow_rotation(
    open: &mut Open,
    folder: &mut AuditFolder,
    notes: &mut Vec<Note>,
) -> anyhow::Result<()> {
    let Ok(meta) = std::fs::metadata(&open.path) else {
        // Renamed away and not yet re-created: keep the old file open until a new one appears.
        return Ok(());
    };
    let subject = format!("audit log {}", open.path.display());
    if file_id(&meta) != open.id {
        // What the old file got after the last poll was drained before this check: nothing is lost.
        open.drain(folder)?;
        open.flush(folder);
        *open = Open::new(&open.path)?;
        notes.push(Note {
            subject,
            message: format!(
                "rotated during the window at {}: followed into the new file, nothing lost",
                jiff::Timestamp::now().strftime("%H:%M:%S")
            ),
        });
        open.drain(folder)?;
    } else if meta.len() < open.pos + open.partial.len() as u64 || !same_head(open) {
        open.partial.clear();
        open.head.clear();
        open.pos = 0;
        open.reader
            .seek(std::io::SeekFrom::Start(0))
            .with_context(|| format!("seeking {}", open.path.display()))?;
        notes.push(Note {
            subject,
            message: format!(
                "truncated during the window at {}: read again from its start; lines written in the last {} ms \
                 before the truncation may be missing",
                jiff::Timestamp::now().strftime("%H:%M:%S"),
                POLL.as_millis()
            ),
        });
        open.drain(folder)?;
    }
    Ok(())
}

/// Whether the file still starts with the bytes first read from it.
fn same_head(open: &Open) -> bool {
    use std::io::Read;
    if open.head.is_empty() {
        return true;
    }
    let Ok(mut f) = std::fs::File::open(&open.path) else {
        return true;
    };
    let mut now = vec![0u8; open.head.len()];
    match f.read_exact(&mut now) {
        Ok(()) => now == open.head,
        // Shorter than what was read: the length check says truncated.
        Err(_) => true,
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    fn event(ms: i64, n: u32) -> String {
        let t = jiff::Timestamp::from_millisecond(ms).unwrap();
        format!(
            r#"{{"kind":"Event","apiVersion":"audit.k8s.io/v1","level":"Metadata","auditID":"a{n}","stage":"ResponseComplete","requestURI":"/apis/bench.ctrlaudit.io/v1alpha1/namespaces/ns/widgets/w","verb":"patch","user":{{"username":"u"}},"userAgent":"looper/1","objectRef":{{"resource":"widgets","namespace":"ns","name":"w","apiGroup":"bench.ctrlaudit.io"}},"responseStatus":{{"code":200}},"requestReceivedTimestamp":"{t}","stageTimestamp":"{t}"}}"#
        ) + "\n"
    }

    fn append(path: &Path, text: &str) {
        use std::io::Write;
        let mut f = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(path)
            .unwrap();
        f.write_all(text.as_bytes()).unwrap();
    }

    /// Until the follower has looked twice more (bounded, for a loaded machine).
    async fn settle(f: &Follower) {
        let seen = f.polls();
        let deadline = tokio::time::Instant::now() + Duration::from_secs(60);
        while f.polls() < seen + 2 {
            assert!(
                tokio::time::Instant::now() < deadline,
                "the follower stopped polling"
            );
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    }

    #[tokio::test(flavor = "multi_thread")]
    async fn a_rotated_and_a_truncated_log_lose_nothing_and_are_noted() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("audit.log");
        let now = jiff::Timestamp::now().as_millisecond();
        append(&path, &event(now - 60_000, 0)); // before the window: not counted
        let f = Follower::start(&path, None, now).unwrap();
        append(&path, &event(now, 1));
        append(&path, "not json\n");
        settle(&f).await;
        // Rotation, lumberjack style: the file is renamed, the API server writes one more line to the old
        // file through its open handle, then starts a new one.
        std::fs::rename(&path, dir.path().join("audit-2026-12-01T07-00-00.000.log")).unwrap();
        append(
            &dir.path().join("audit-2026-12-01T07-00-00.000.log"),
            &event(now + 1, 2),
        );
        append(&path, &event(now + 2, 3));
        settle(&f).await;
        // copytruncate: emptied in place, then written again.
        std::fs::write(&path, "").unwrap();
        append(&path, &event(now + 3, 4));
        // A half-written last line is kept for the next read, not counted as malformed.
        append(&path, &event(now + 4, 5)[..40]);
        settle(&f).await;
        append(&path, &event(now + 4, 5)[40..]);
        let (summary, notes) = f.finish(now + 10).await.unwrap();
        assert_eq!(summary.requests, 5, "{summary:?}");
        assert_eq!(summary.malformed, 1);
        let notes: Vec<&str> = notes.iter().map(|n| n.message.as_str()).collect();
        assert_eq!(notes.len(), 2, "{notes:?}");
        assert!(
            notes[0].starts_with("rotated during the window"),
            "{notes:?}"
        );
        assert!(
            notes[1].starts_with("truncated during the window"),
            "{notes:?}"
        );
    }
}
