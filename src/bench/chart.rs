//! One SVG chart per run: Ready objects (top) and work-queue depth (bottom) over time, one line per variant.

use std::path::Path;

use anyhow::{Context, Result, anyhow};
use plotters::prelude::*;

use super::csv::Row;

/// A variant's line data.
#[derive(Debug, Clone)]
pub struct Line<'a> {
    pub name: &'a str,
    pub rows: &'a [Row],
    /// The variant shows an anti-pattern (it has a rule): drawn in the warning colours, the others in cool ones,
    /// so that the bad side reads as bad at a glance, as in the findings' reports.
    pub anti_pattern: bool,
}

/// The anti-patterns' colours, the first the reports' warning colour (`--warning` of the HTML report).
const WARM: &[RGBColor] = &[
    RGBColor(0x9a, 0x67, 0x00),
    RGBColor(214, 39, 40),
    RGBColor(255, 127, 14),
    RGBColor(140, 86, 75),
    RGBColor(227, 119, 194),
];

/// The other variants' colours, apart from the warm ones and from each other on white.
const COOL: &[RGBColor] = &[
    RGBColor(31, 119, 180),
    RGBColor(44, 160, 44),
    RGBColor(23, 190, 207),
    RGBColor(148, 103, 189),
    RGBColor(127, 127, 127),
];

/// Each line's colour: the n-th anti-pattern takes the n-th warm colour, the n-th other the n-th cool one.
fn colors(lines: &[Line<'_>]) -> Vec<RGBColor> {
    let (mut warm, mut cool) = (0, 0);
    lines
        .iter()
        .map(|l| {
            let (palette, n) = if l.anti_pattern {
                (WARM, &mut warm)
            } else {
                (COOL, &mut cool)
            };
            *n += 1;
            palette[(*n - 1) % palette.len()]
        })
        .collect()
}

/// Renders the chart as SVG text.
pub fn render(title: &str, lines: &[Line<'_>]) -> Result<String> {
    let mut svg = String::new();
    {
        let root = SVGBackend::with_string(&mut svg, (1000, 720)).into_drawing_area();
        root.fill(&WHITE).map_err(|e| anyhow!("{e:?}"))?;
        let root = root
            .titled(title, ("sans-serif", 20))
            .map_err(|e| anyhow!("{e:?}"))?;
        let (top, bottom) = root.split_vertically(340);
        let t_max = lines
            .iter()
            .flat_map(|l| l.rows.iter().map(|r| r.t))
            .fold(1.0, f64::max);
        let ready_max = lines
            .iter()
            .flat_map(|l| l.rows.iter().map(|r| r.objects.max(r.ready) as f64))
            .fold(1.0, f64::max);
        let depth_max = lines
            .iter()
            .flat_map(|l| l.rows.iter().map(|r| r.snap.depth))
            .fold(1.0, f64::max);
        panel(&top, "Ready objects", t_max, ready_max * 1.05, lines, |r| {
            r.ready as f64
        })?;
        panel(
            &bottom,
            "workqueue_depth",
            t_max,
            depth_max * 1.05,
            lines,
            |r| r.snap.depth,
        )?;
        root.present().map_err(|e| anyhow!("{e:?}"))?;
    }
    Ok(svg)
}

fn panel<DB: DrawingBackend>(
    area: &DrawingArea<DB, plotters::coord::Shift>,
    y_desc: &str,
    t_max: f64,
    y_max: f64,
    lines: &[Line<'_>],
    y: impl Fn(&Row) -> f64,
) -> Result<()> {
    let mut chart = ChartBuilder::on(area)
        .margin(12)
        .x_label_area_size(34)
        .y_label_area_size(64)
        .build_cartesian_2d(0f64..t_max, 0f64..y_max)
        .map_err(|e| anyhow!("{e:?}"))?;
    chart
        .configure_mesh()
        .x_desc("seconds since the variants started")
        .y_desc(y_desc)
        .x_label_formatter(&|x| format!("{x:.0}"))
        .y_label_formatter(&|y| format!("{y:.0}"))
        .draw()
        .map_err(|e| anyhow!("{e:?}"))?;
    for (line, c) in lines.iter().zip(colors(lines)) {
        chart
            .draw_series(LineSeries::new(
                line.rows.iter().map(|r| (r.t, y(r))),
                c.stroke_width(2),
            ))
            .map_err(|e| anyhow!("{e:?}"))?
            .label(line.name)
            .legend(move |(x, y)| PathElement::new(vec![(x, y), (x + 18, y)], c.stroke_width(2)));
    }
    chart
        .configure_series_labels()
        .position(SeriesLabelPosition::UpperRight)
        .background_style(WHITE.mix(0.85))
        .border_style(BLACK)
        .draw()
        .map_err(|e| anyhow!("{e:?}"))?;
    Ok(())
}

/// Renders and writes the chart to `path`; returns the SVG (report.html inlines it).
pub fn write(path: &Path, title: &str, lines: &[Line<'_>]) -> Result<String> {
    let svg = render(title, lines)?;
    std::fs::write(path, &svg).with_context(|| format!("writing {}", path.display()))?;
    Ok(svg)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn renders_an_svg_without_font_libraries() {
        let rows: Vec<Row> = (0..5)
            .map(|i| Row {
                t: f64::from(i),
                ready: u64::from(i as u32) * 10,
                objects: 40,
                scraped: true,
                ..Row::default()
            })
            .collect();
        let svg = render(
            "experiment 1",
            &[
                Line {
                    name: "good",
                    rows: &rows,
                    anti_pattern: false,
                },
                Line {
                    name: "bad-annotation-loop",
                    rows: &rows,
                    anti_pattern: true,
                },
            ],
        )
        .expect("renders");
        assert!(svg.starts_with("<svg"));
        assert!(svg.contains("good"));
        assert!(svg.contains("workqueue_depth"));
        // The bad variant is drawn in the warning colour, the good one not, whatever their order.
        assert!(svg.contains("#9A6700"), "no line in the warning colour");
        let lines = |order: &[bool]| {
            let ls: Vec<Line<'_>> = order
                .iter()
                .map(|&anti_pattern| Line {
                    name: "x",
                    rows: &rows,
                    anti_pattern,
                })
                .collect();
            colors(&ls)
        };
        assert_eq!(
            lines(&[true, false]),
            lines(&[false, true]).into_iter().rev().collect::<Vec<_>>()
        );
        assert_eq!(lines(&[false, true])[1], WARM[0]);
    }
}
