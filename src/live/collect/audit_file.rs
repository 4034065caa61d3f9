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
    tokio::task::spawn_blocking(move || read_blocking(&path, namespace.as_deref(), window))
        .await
        .context("the audit log reader panicked")?
}

/// [`read`] on the calling thread (`--replay` reads its `audit.jsonl` this way): every line, the last one too
/// when it has no newline, none longer than [`MAX_LINE`] kept in memory.
pub fn read_blocking(
    path: &Path,
    namespace: Option<&str>,
    window: Option<(i64, i64)>,
) -> anyhow::Result<AuditSummary> {
    let mut folder = AuditFolder::new(&path.display().to_string(), namespace);
    if let Some((a, b)) = window {
        folder = folder.within(a - SLACK_MS, b + SLACK_MS);
    }
    let mut file = Open::new(path)?;
    file.drain(&mut folder)?;
    // Nothing more will be written: a last line without its newline is a line (an excerpt cut by hand, a log
    // copied while the API server was between two writes).
    file.flush(&mut folder);
    Ok(folder.finish())
}

/// The longest audit line kept: an event at level RequestResponse carries its request and response objects,
/// each at most etcd's 1.5 MiB, JSON-escaped. A longer line is no event the API server writes; it is counted as
/// malformed and skipped to its end without being held (a 114 MB line once cost 1.9 GB).
pub const MAX_LINE: usize = 4 << 20;

/// One open audit log: its identity on disk, where reading stopped, and the partial line after that.
struct Open {
    path: PathBuf,
    reader: std::io::BufReader<std::fs::File>,
    /// (device, inode) of the file that is open: a different one at `path` means the log was rotated.
    id: (u64, u64),
    /// Bytes consumed, complete lines only.
    pos: u64,
    partial: Vec<u8>,
    /// The line being read is longer than `max_line`: its bytes are counted, not kept, up to its newline.
    skipping: Option<u64>,
    max_line: usize,
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

/// Why an audit log cannot be read at all.
#[derive(Debug, thiserror::Error)]
pub enum OpenError {
    /// A FIFO, a device (`/dev/zero`) or a directory: reading it could block or never end.
    #[error(
        "{0} is not a regular file: --audit-log reads the file an API server writes (--audit-log-path)"
    )]
    NotAFile(String),
}

/// Fails unless `path` is a regular file (or a link to one). Checked before opening: opening a FIFO blocks
/// until something writes to it.
pub fn check_regular(path: &Path) -> anyhow::Result<()> {
    let meta =
        std::fs::metadata(path).with_context(|| format!("cannot open {}", path.display()))?;
    if !meta.is_file() {
        return Err(OpenError::NotAFile(path.display().to_string()).into());
    }
    Ok(())
}

impl Open {
    fn new(path: &Path) -> anyhow::Result<Self> {
        check_regular(path)?;
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
            skipping: None,
            max_line: MAX_LINE,
            head: Vec::new(),
        })
    }

    /// Bytes read of the line not yet complete.
    fn pending(&self) -> u64 {
        self.skipping.unwrap_or(self.partial.len() as u64)
    }

    /// Folds every complete line up to the current end; a last line without its newline waits for the next
    /// call (the API server may be writing it). A line is read in the reader's chunks so that one over
    /// `max_line` is never held whole.
    fn drain(&mut self, folder: &mut AuditFolder) -> anyhow::Result<()> {
        loop {
            let buf = self
                .reader
                .fill_buf()
                .with_context(|| format!("reading {}", self.path.display()))?;
            if buf.is_empty() {
                return Ok(());
            }
            let (chunk, complete) = match buf.iter().position(|&b| b == b'\n') {
                Some(i) => (&buf[..=i], true),
                None => (buf, false),
            };
            let n = chunk.len();
            if self.head.len() < HEAD {
                // Every byte so far went into the head: it is the file's first bytes.
                let take = (HEAD - self.head.len()).min(n);
                self.head.extend_from_slice(&chunk[..take]);
            }
            match &mut self.skipping {
                Some(skipped) => *skipped += n as u64,
                None if self.partial.len() + n > self.max_line => {
                    self.skipping = Some((self.partial.len() + n) as u64);
                    self.partial = Vec::new();
                }
                None => self.partial.extend_from_slice(chunk),
            }
            self.reader.consume(n);
            if complete {
                self.pos += self.pending();
                self.fold(folder);
            }
        }
    }

    /// The line read so far, as a whole line.
    fn fold(&mut self, folder: &mut AuditFolder) {
        if self.skipping.take().is_some() {
            folder.malformed_line();
            return;
        }
        match std::str::from_utf8(&self.partial) {
            Ok(line) => folder.line(line),
            Err(_) => folder.malformed_line(),
        }
        self.partial.clear();
    }

    /// The partial last line, folded as it is (at the very end, when nothing more will come).
    fn flush(&mut self, folder: &mut AuditFolder) {
        if self.pending() > 0 {
            self.fold(folder);
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
    } else if meta.len() < open.pos + open.pending() || !same_head(open) {
        open.partial.clear();
        open.skipping = None;
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

    #[tokio::test(flavor = "multi_thread")]
    async fn the_last_line_without_a_newline_is_folded_when_read_whole() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("audit.log");
        let now = jiff::Timestamp::now().as_millisecond();
        let last = event(now + 1, 1);
        append(&path, &(event(now, 0) + last.trim_end_matches('\n')));
        let s = read(&path, None, None).await.unwrap();
        assert_eq!((s.lines, s.requests, s.malformed), (2, 2, 0), "{s:?}");
    }

    #[test]
    fn an_over_long_line_is_malformed_and_never_held_whole() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("audit.log");
        let now = jiff::Timestamp::now().as_millisecond();
        let long = "x".repeat(MAX_LINE + (1 << 20));
        append(&path, &event(now, 0));
        append(&path, &format!("{long}\n"));
        append(&path, &event(now + 1, 1));
        append(&path, &long); // and one more, cut off at the end of the file
        let s = read_blocking(&path, None, None).unwrap();
        assert_eq!((s.lines, s.requests, s.malformed), (4, 2, 2), "{s:?}");

        // Followed: the long line arrives in pieces; what is held stays under the cap while it is skipped,
        // and the line is one malformed line once its newline comes.
        let path = dir.path().join("followed.log");
        append(&path, "");
        let mut open = Open::new(&path).unwrap();
        open.max_line = 1000;
        let mut folder = AuditFolder::new("t", None);
        for _ in 0..50 {
            append(&path, &"y".repeat(2000));
            open.drain(&mut folder).unwrap();
            assert!(
                open.partial.capacity() <= 2 * open.max_line,
                "{}",
                open.partial.capacity()
            );
        }
        assert_eq!(open.pending(), 100_000);
        append(&path, &format!("\n{}", event(now, 2)));
        open.drain(&mut folder).unwrap();
        let s = folder.finish();
        assert_eq!((s.lines, s.requests, s.malformed), (2, 1, 1), "{s:?}");
        assert_eq!(open.pos, std::fs::metadata(&path).unwrap().len());
    }

    #[cfg(unix)]
    #[test]
    fn a_fifo_or_a_device_is_refused_without_blocking() {
        let dir = tempfile::tempdir().unwrap();
        let fifo = dir.path().join("fifo");
        let made = std::process::Command::new("mkfifo")
            .arg(&fifo)
            .status()
            .unwrap();
        assert!(made.success());
        for p in [fifo.as_path(), Path::new("/dev/zero"), dir.path()] {
            let e = read_blocking(p, None, None).expect_err("not a file");
            assert!(format!("{e:#}").contains("is not a regular file"), "{e:#}");
        }
    }
}
