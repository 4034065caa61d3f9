//! A report laid out once as blocks (lines, tables, charts) and rendered twice: as terminal text and, by
//! [`super::html`], as the self-contained page people share. Keeping one layout is what stops the two from
//! drifting apart.

/// How a line reads: the HTML page styles each tone; the text keeps the words that say it (`note:`, …).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Tone {
    Plain,
    /// Something the reader should know about the measurement.
    Note,
    /// The run is incomplete or something was left behind.
    Alert,
    /// A command to copy.
    Command,
}

/// One block of a report, in reading order.
#[derive(Debug)]
pub enum Block {
    Line(Tone, String),
    Table(comfy_table::Table),
    /// An SVG chart we rendered ourselves; the text rendering leaves it out (it is a file beside the report).
    Chart {
        caption: String,
        svg: String,
    },
}

/// A titled report.
#[derive(Debug)]
pub struct Document {
    pub title: String,
    pub blocks: Vec<Block>,
}

impl Document {
    pub fn new(title: impl Into<String>) -> Self {
        Self {
            title: title.into(),
            blocks: Vec::new(),
        }
    }

    pub fn line(&mut self, tone: Tone, text: impl Into<String>) {
        self.blocks.push(Block::Line(tone, text.into()));
    }

    pub fn table(&mut self, table: comfy_table::Table) {
        self.blocks.push(Block::Table(table));
    }

    /// The terminal text: the title, then each line and table on its own lines; charts are left out.
    pub fn text(&self) -> String {
        let mut out = format!("{}\n", self.title);
        for block in &self.blocks {
            match block {
                Block::Line(_, text) => {
                    out.push_str(text);
                    out.push('\n');
                }
                Block::Table(t) => {
                    out.push_str(&t.to_string());
                    out.push('\n');
                }
                Block::Chart { .. } => {}
            }
        }
        out
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    #[test]
    fn text_keeps_lines_and_tables_in_order_and_leaves_charts_out() {
        let mut d = Document::new("title");
        d.line(Tone::Plain, "first");
        let mut t = comfy_table::Table::new();
        t.set_header(["a", "b"]).add_row(["1", "2"]);
        d.table(t);
        d.blocks.push(Block::Chart {
            caption: "chart".into(),
            svg: "<svg/>".into(),
        });
        d.line(Tone::Alert, "INCOMPLETE: x");
        let text = d.text();
        assert!(text.starts_with("title\nfirst\n"), "{text}");
        assert!(text.ends_with("INCOMPLETE: x\n"), "{text}");
        assert!(text.find("first").unwrap() < text.find('1').unwrap());
        assert!(!text.contains("svg"), "{text}");
    }
}
