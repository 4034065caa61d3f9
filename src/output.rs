//! Writing results to stdout. A reader that goes away (`kubectl ctrlaudit rules | head -3`) ends the output
//! quietly: the rest is dropped and the command keeps the exit status its result calls for, where `print!`
//! would panic on the closed pipe.

use std::io::{self, Write};

/// Writes `text` to stdout and flushes it; a closed stdout (broken pipe) is not an error.
pub fn print(text: &str) -> io::Result<()> {
    ignore_closed(write_to(&mut io::stdout().lock(), text))
}

/// [`print`] with a newline.
pub fn println(text: &str) -> io::Result<()> {
    print(&format!("{text}\n"))
}

fn write_to(w: &mut impl Write, text: &str) -> io::Result<()> {
    w.write_all(text.as_bytes())?;
    w.flush()
}

fn ignore_closed(r: io::Result<()>) -> io::Result<()> {
    match r {
        Err(e) if e.kind() == io::ErrorKind::BrokenPipe => Ok(()),
        other => other,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    struct Closed;

    impl Write for Closed {
        fn write(&mut self, _: &[u8]) -> io::Result<usize> {
            Err(io::ErrorKind::BrokenPipe.into())
        }
        fn flush(&mut self) -> io::Result<()> {
            Ok(())
        }
    }

    struct Full;

    impl Write for Full {
        fn write(&mut self, _: &[u8]) -> io::Result<usize> {
            Err(io::Error::other("no space left on device"))
        }
        fn flush(&mut self) -> io::Result<()> {
            Ok(())
        }
    }

    #[test]
    fn a_closed_pipe_is_quiet_and_other_errors_are_not() {
        assert!(ignore_closed(write_to(&mut Closed, "x")).is_ok());
        assert!(ignore_closed(write_to(&mut Full, "x")).is_err());
        let mut v = Vec::new();
        write_to(&mut v, "ok").expect("a Vec takes it");
        assert_eq!(v, b"ok");
    }
}
