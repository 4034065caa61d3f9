//! The per-second CSV of a variant (`DIR/<variant>.csv`): one row per scrape, one column per figure, ready for
//! DuckDB, pandas or a spreadsheet.

use std::io::Write;

use super::scrape::Snapshot;

/// One second of one variant: Ready from the harness's watch, the rest from the variant's `/metrics`.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Row {
    /// Seconds since the variants started.
    pub t: f64,
    /// Objects Ready at their current generation, and how many there are.
    pub ready: u64,
    pub objects: u64,
    /// False when the scrape failed (the figures then repeat the last good one).
    pub scraped: bool,
    pub snap: Snapshot,
}

/// The header, in the order of [`Row::fields`].
pub const HEADER: &[&str] = &[
    "t_seconds",
    "ready",
    "objects",
    "scrape_ok",
    "reconcile_success",
    "reconcile_error",
    "reconcile_requeue_after",
    "reconcile_total",
    "reconcile_time_sum_seconds",
    "workqueue_depth",
    "workqueue_adds_total",
    "workqueue_retries_total",
    "conflict_retries_total",
    "active_workers",
    "requests_get",
    "requests_list",
    "requests_watch",
    "requests_create",
    "requests_update",
    "requests_patch",
    "requests_delete",
    "writes_total",
    "status_writes_total",
    "responses_409",
    "watches_open",
    "series",
    "resident_bytes",
    "tokio_tasks",
];

fn num(x: f64) -> String {
    if x.fract() == 0.0 && x.abs() < 1e15 {
        format!("{}", x as i64)
    } else {
        format!("{x:.6}")
    }
}

fn opt(x: Option<f64>) -> String {
    x.map(num).unwrap_or_default()
}

impl Row {
    /// The row's fields, matching [`HEADER`].
    pub fn fields(&self) -> Vec<String> {
        let s = &self.snap;
        let r = |k: &str| s.reconciles.get(k).copied().unwrap_or(0.0);
        vec![
            format!("{:.3}", self.t),
            self.ready.to_string(),
            self.objects.to_string(),
            u8::from(self.scraped).to_string(),
            num(r("success")),
            num(r("error")),
            num(r("requeue_after")),
            num(s.reconciles_total()),
            num(s.reconcile_time_sum),
            num(s.depth),
            num(s.adds),
            num(s.retries),
            num(s.conflict_retries),
            num(s.active_workers),
            num(s.verb("get")),
            num(s.verb("list")),
            num(s.verb("watch")),
            num(s.verb("create")),
            num(s.verb("update")),
            num(s.verb("patch")),
            num(s.verb("delete") + s.verb("deletecollection")),
            num(s.writes()),
            num(s.status_writes()),
            num(s.code("409")),
            num(s.watches_open),
            s.series.to_string(),
            opt(s.resident_bytes),
            opt(s.tasks),
        ]
    }
}

/// Quotes a field when it needs it (RFC 4180).
pub fn field(s: &str) -> String {
    if s.contains([',', '"', '\n', '\r']) {
        format!("\"{}\"", s.replace('"', "\"\""))
    } else {
        s.to_string()
    }
}

/// Writes one line of fields.
pub fn write_line<W: Write>(w: &mut W, fields: &[String]) -> std::io::Result<()> {
    let line: Vec<String> = fields.iter().map(|f| field(f)).collect();
    writeln!(w, "{}", line.join(","))
}

/// Writes the header line.
pub fn write_header<W: Write>(w: &mut W) -> std::io::Result<()> {
    let h: Vec<String> = HEADER.iter().map(|s| s.to_string()).collect();
    write_line(w, &h)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rows_match_the_header_and_quote_when_needed() {
        let mut snap = Snapshot::default();
        snap.reconciles.insert("success".into(), 12.0);
        snap.requests
            .insert(("patch".into(), "status".into(), "200".into()), 12.0);
        let row = Row {
            t: 1.5,
            ready: 10,
            objects: 20,
            scraped: true,
            snap,
        };
        let f = row.fields();
        assert_eq!(f.len(), HEADER.len());
        assert_eq!(f[0], "1.500");
        assert_eq!(f[4], "12");
        assert_eq!(
            f[HEADER
                .iter()
                .position(|h| *h == "status_writes_total")
                .unwrap_or(0)],
            "12"
        );
        let mut out = Vec::new();
        write_header(&mut out).expect("header");
        write_line(
            &mut out,
            &["a,b".into(), "say \"hi\"".into(), "1.25".into()],
        )
        .expect("line");
        let text = String::from_utf8(out).expect("utf8");
        assert!(text.starts_with("t_seconds,ready,objects,"));
        assert!(text.ends_with("\"a,b\",\"say \"\"hi\"\"\",1.25\n"));
        assert_eq!(num(0.5), "0.500000");
    }
}
