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
}

/// Colours that stay apart on white, in order.
const COLORS: &[RGBColor] = &[
    RGBColor(31, 119, 180),
    RGBColor(214, 39, 40),
    RGBColor(44, 160, 44),
    RGBColor(255, 127, 14),
    RGBColor(148, 103, 189),
    RGBColor(140, 86, 75),
    RGBColor(227, 119, 194),
    RGBColor(127, 127, 127),
    RGBColor(188, 189, 34),
    RGBColor(23, 190, 207),
];

fn color(i: usize) -> RGBColor {
    COLORS[i % COLORS.len()]
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
    for (i, line) in lines.iter().enumerate() {
        let c = color(i);
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
            &[Line {
                name: "good",
                rows: &rows,
            }],
        )
        .expect("renders");
        assert!(svg.starts_with("<svg"));
        assert!(svg.contains("good"));
        assert!(svg.contains("workqueue_depth"));
    }
}
