//! Reading a file a user's tree hands us, safely: only a regular file (a FIFO would block forever, `/dev/zero`
//! never ends), and never more than a cap, checked on the open file before reading and again while reading (a
//! file can grow or be swapped between the two).

use std::io::Read;
use std::path::Path;

/// Why a file was not read.
#[derive(Debug, thiserror::Error)]
pub enum ReadError {
    #[error("cannot read file: {0}")]
    Io(#[from] std::io::Error),
    #[error("not a regular file ({0}): not read")]
    NotRegular(&'static str),
    #[error("file is {size} bytes, over the {max}-byte limit: not read")]
    TooLarge { size: u64, max: u64 },
}

/// Opens `path` without blocking on a FIFO, and refuses anything but a regular file, of at most `max` bytes.
pub fn open(path: &Path, max: u64) -> Result<(std::fs::File, u64), ReadError> {
    let mut options = std::fs::OpenOptions::new();
    options.read(true);
    #[cfg(unix)]
    {
        use std::os::unix::fs::OpenOptionsExt;
        // Opening a FIFO for reading waits for a writer; O_NONBLOCK returns at once (and does nothing to a
        // regular file's reads).
        options.custom_flags(libc::O_NONBLOCK);
    }
    let file = options.open(path)?;
    // The type of what was opened, not of what the path named a moment before.
    let meta = file.metadata()?;
    if !meta.file_type().is_file() {
        return Err(ReadError::NotRegular(kind_of(&meta.file_type())));
    }
    if meta.len() > max {
        return Err(ReadError::TooLarge {
            size: meta.len(),
            max,
        });
    }
    Ok((file, meta.len()))
}

/// The whole of a regular file of at most `max` bytes.
pub fn read(path: &Path, max: u64) -> Result<Vec<u8>, ReadError> {
    let (file, len) = open(path, max)?;
    let mut out = Vec::with_capacity(usize::try_from(len).unwrap_or(0).min(1 << 20));
    // One byte more than allowed tells a file that grew past the cap after the check.
    file.take(max + 1).read_to_end(&mut out)?;
    if out.len() as u64 > max {
        return Err(ReadError::TooLarge {
            size: out.len() as u64,
            max,
        });
    }
    Ok(out)
}

/// [`read`] as UTF-8 text.
pub fn read_to_string(path: &Path, max: u64) -> Result<String, ReadError> {
    String::from_utf8(read(path, max)?).map_err(|_| {
        ReadError::Io(std::io::Error::new(
            std::io::ErrorKind::InvalidData,
            "not UTF-8 text",
        ))
    })
}

fn kind_of(t: &std::fs::FileType) -> &'static str {
    #[cfg(unix)]
    {
        use std::os::unix::fs::FileTypeExt;
        if t.is_fifo() {
            return "a FIFO";
        }
        if t.is_char_device() {
            return "a character device";
        }
        if t.is_block_device() {
            return "a block device";
        }
        if t.is_socket() {
            return "a socket";
        }
    }
    if t.is_dir() {
        "a directory"
    } else {
        "a special file"
    }
}

#[cfg(all(test, unix))]
mod tests {
    use super::*;

    #[test]
    fn a_fifo_is_refused_at_once() {
        let dir = tempfile::tempdir().expect("tempdir");
        let fifo = dir.path().join("x.rs");
        let status = std::process::Command::new("mkfifo")
            .arg(&fifo)
            .status()
            .expect("mkfifo");
        assert!(status.success());
        // No writer ever opens it: a blocking open would hang this test.
        let e = read(&fifo, 1 << 20).expect_err("a FIFO");
        assert!(matches!(e, ReadError::NotRegular("a FIFO")), "{e}");
    }

    #[test]
    fn devices_and_oversized_files_are_refused_before_reading() {
        let e = read(Path::new("/dev/zero"), 1 << 20).expect_err("a device");
        assert!(matches!(e, ReadError::NotRegular(_)), "{e}");
        let dir = tempfile::tempdir().expect("tempdir");
        let link = dir.path().join("zero.rs");
        std::os::unix::fs::symlink("/dev/zero", &link).expect("symlink");
        assert!(matches!(
            read(&link, 1 << 20),
            Err(ReadError::NotRegular(_))
        ));
        // A sparse gigabyte: refused from its size, nothing read.
        let big = dir.path().join("big.rs");
        let f = std::fs::File::create(&big).expect("create");
        f.set_len(1 << 30).expect("set_len");
        assert!(matches!(
            read(&big, 2_000_000),
            Err(ReadError::TooLarge { size, .. }) if size == 1 << 30
        ));
        let ok = dir.path().join("ok.rs");
        std::fs::write(&ok, "fn main() {}").expect("write");
        assert_eq!(read_to_string(&ok, 100).expect("read"), "fn main() {}");
    }
}
