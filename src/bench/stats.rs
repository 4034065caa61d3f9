//! Small statistics over scraped data: histogram quantiles (as PromQL's `histogram_quantile`) and
//! percentiles of plain samples.

/// The `q` quantile (0..=1) of a cumulative histogram given as `(upper bound, cumulative count)` sorted by
/// bound with `+Inf` last, interpolating linearly inside the bucket like Prometheus. `None` without
/// observations.
pub fn histogram_quantile(q: f64, buckets: &[(f64, f64)]) -> Option<f64> {
    let total = buckets.last()?.1;
    if total.is_nan() || total <= 0.0 || !(0.0..=1.0).contains(&q) {
        return None;
    }
    let rank = q * total;
    let mut prev_bound = 0.0;
    let mut prev_count = 0.0;
    for &(bound, count) in buckets {
        if count >= rank {
            if bound.is_infinite() {
                // Above the highest finite bucket: Prometheus answers with that bound.
                return Some(prev_bound);
            }
            let in_bucket = count - prev_count;
            if in_bucket <= 0.0 {
                return Some(bound);
            }
            return Some(prev_bound + (bound - prev_bound) * (rank - prev_count) / in_bucket);
        }
        prev_bound = bound;
        prev_count = count;
    }
    Some(prev_bound)
}

/// The `q` percentile (0..=1) of `values` by nearest rank; `None` when empty.
pub fn percentile(values: &mut [f64], q: f64) -> Option<f64> {
    if values.is_empty() {
        return None;
    }
    values.sort_by(f64::total_cmp);
    let rank = (q.clamp(0.0, 1.0) * values.len() as f64).ceil() as usize;
    values
        .get(rank.saturating_sub(1).min(values.len() - 1))
        .copied()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn quantiles_interpolate_like_promql() {
        let b = [
            (0.01, 0.0),
            (0.025, 50.0),
            (0.05, 100.0),
            (f64::INFINITY, 100.0),
        ];
        let p50 = histogram_quantile(0.5, &b).expect("p50");
        assert!((p50 - 0.025).abs() < 1e-9, "{p50}");
        let p99 = histogram_quantile(0.99, &b).expect("p99");
        assert!((p99 - 0.0495).abs() < 1e-9, "{p99}");
        let p25 = histogram_quantile(0.25, &b).expect("p25");
        assert!((p25 - 0.0175).abs() < 1e-9, "{p25}");
        // Everything above the last finite bound.
        let high = [(0.01, 0.0), (f64::INFINITY, 10.0)];
        assert_eq!(histogram_quantile(0.5, &high), Some(0.01));
        assert_eq!(histogram_quantile(0.5, &[(f64::INFINITY, 0.0)]), None);
        assert_eq!(histogram_quantile(0.5, &[]), None);
    }

    #[test]
    fn percentiles_by_nearest_rank() {
        let mut v = vec![5.0, 1.0, 3.0, 2.0, 4.0];
        assert_eq!(percentile(&mut v, 0.5), Some(3.0));
        assert_eq!(percentile(&mut v, 0.99), Some(5.0));
        assert_eq!(percentile(&mut v, 0.0), Some(1.0));
        assert_eq!(percentile(&mut [], 0.5), None);
    }
}
