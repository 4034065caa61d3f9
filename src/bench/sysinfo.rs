//! Process and thread figures from `/proc` (Linux): resident memory and CPU time, without unsafe code.

use std::time::Duration;

/// Resident set size of this process in bytes (`VmRSS` in `/proc/self/status`); `None` off Linux.
pub fn resident_bytes() -> Option<u64> {
    let text = std::fs::read_to_string("/proc/self/status").ok()?;
    parse_vm_rss(&text)
}

fn parse_vm_rss(status: &str) -> Option<u64> {
    let line = status.lines().find(|l| l.starts_with("VmRSS:"))?;
    let kib: u64 = line.split_whitespace().nth(1)?.parse().ok()?;
    Some(kib * 1024)
}

/// CPU time the calling thread has run (`/proc/thread-self/schedstat`, nanoseconds); `None` off Linux.
pub fn thread_cpu() -> Option<Duration> {
    let text = std::fs::read_to_string("/proc/thread-self/schedstat").ok()?;
    let ns: u64 = text.split_whitespace().next()?.parse().ok()?;
    Some(Duration::from_nanos(ns))
}

/// User plus system CPU time of the whole process (`/proc/self/stat`, in USER_HZ = 100 ticks per second,
/// which is fixed by the kernel ABI for this file).
pub fn process_cpu() -> Option<Duration> {
    let text = std::fs::read_to_string("/proc/self/stat").ok()?;
    parse_stat_cpu(&text)
}

fn parse_stat_cpu(stat: &str) -> Option<Duration> {
    // The command name (field 2) may contain spaces and parentheses: count fields after the last ')'.
    let after = &stat[stat.rfind(')')? + 1..];
    let fields: Vec<&str> = after.split_whitespace().collect();
    // utime and stime are fields 14 and 15 overall, i.e. 12 and 13 after the name (state is field 3).
    let utime: u64 = fields.get(11)?.parse().ok()?;
    let stime: u64 = fields.get(12)?.parse().ok()?;
    Some(Duration::from_millis((utime + stime) * 10))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_proc_files() {
        assert_eq!(
            parse_vm_rss("Name:\tx\nVmRSS:\t   2048 kB\nVmData: 1 kB\n"),
            Some(2048 * 1024)
        );
        let stat = "123 (a b) c) S 1 2 3 4 5 6 7 8 9 10 250 50 0 0 20 0 4";
        assert_eq!(parse_stat_cpu(stat), Some(Duration::from_millis(3000)));
    }

    #[test]
    fn reads_this_process() {
        if cfg!(target_os = "linux") {
            assert!(resident_bytes().is_some_and(|b| b > 0));
            assert!(thread_cpu().is_some());
            assert!(process_cpu().is_some());
        }
    }
}
