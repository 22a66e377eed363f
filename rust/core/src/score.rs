//! Score arithmetic shared by the ranking lanes: final scores and reciprocal-rank fusion.
//!
//! Invariants:
//! - Every ordering in the crate goes through [`cmp_desc`]: higher scores first, NaN after every
//!   number, so a NaN produced upstream can never reorder real results or make a sort panic.
//! - Results are deterministic: equal scores are broken by the lower id (or index).

use std::cmp::Ordering;
use std::collections::HashMap;

use crate::error::{same_len, CoreError};

/// Orders two scores best first: descending, with NaN last.
pub fn cmp_desc(a: f64, b: f64) -> Ordering {
    match (a.is_nan(), b.is_nan()) {
        (true, true) => Ordering::Equal,
        (true, false) => Ordering::Greater,
        (false, true) => Ordering::Less,
        (false, false) => b.total_cmp(&a),
    }
}

/// Combines a base relevance score with recency and source trust:
/// `base * trust * (1 + recency_weight * clamp(recency, 0, 1))`.
///
/// Recency is clamped because it is derived from clocks that can skew (a timestamp slightly in
/// the future must not outrank everything).
///
/// # Errors
/// [`CoreError::LengthMismatch`] when the three slices differ in length.
pub fn final_scores(
    base: &[f64],
    recency: &[f64],
    trust: &[f64],
    recency_weight: f64,
) -> Result<Vec<f64>, CoreError> {
    same_len("base", base.len(), "recency", recency.len())?;
    same_len("base", base.len(), "trust", trust.len())?;
    Ok(base
        .iter()
        .zip(recency)
        .zip(trust)
        .map(|((&b, &r), &t)| final_score(b, r, t, recency_weight))
        .collect())
}

/// One item of [`final_scores`].
pub fn final_score(base: f64, recency: f64, trust: f64, recency_weight: f64) -> f64 {
    base * trust * recency_weight.mul_add(recency.clamp(0.0, 1.0), 1.0)
}

/// Reciprocal-rank fusion of ranked id lists (best first).
///
/// `score(id) = sum over lanes l containing id of weights[l] / (k + rank_l(id) + 1)`, with
/// `rank` counted from 0. An id repeated within one lane counts once, at its best rank, so a
/// lane cannot vote twice. Returns every id that appears in any lane, best first, ties by id.
///
/// # Errors
/// [`CoreError::LengthMismatch`] when `lanes` and `weights` differ in length;
/// [`CoreError::InvalidArgument`] when `k` is negative or not finite.
pub fn rrf_fuse(lanes: &[Vec<i64>], weights: &[f64], k: f64) -> Result<Vec<(i64, f64)>, CoreError> {
    same_len("lanes", lanes.len(), "weights", weights.len())?;
    if !k.is_finite() || k < 0.0 {
        return Err(CoreError::InvalidArgument {
            name: "k",
            reason: "must be a finite number >= 0",
        });
    }
    let mut scores: HashMap<i64, f64> = HashMap::new();
    let mut seen_in_lane: HashMap<i64, usize> = HashMap::new();
    for (lane_no, (lane, &weight)) in lanes.iter().zip(weights).enumerate() {
        for (rank, &id) in lane.iter().enumerate() {
            // Only the first (best) occurrence of an id in a lane contributes.
            if seen_in_lane.insert(id, lane_no) == Some(lane_no) {
                continue;
            }
            *scores.entry(id).or_insert(0.0) += weight / (k + rank as f64 + 1.0);
        }
    }
    let mut fused: Vec<(i64, f64)> = scores.into_iter().collect();
    fused.sort_unstable_by(|a, b| cmp_desc(a.1, b.1).then(a.0.cmp(&b.0)));
    Ok(fused)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn nan_sorts_last() {
        let mut v = [f64::NAN, 1.0, -2.0, f64::INFINITY];
        v.sort_by(|a, b| cmp_desc(*a, *b));
        let bits: Vec<u64> = v[..3].iter().map(|x| x.to_bits()).collect();
        let want: Vec<u64> = [f64::INFINITY, 1.0, -2.0]
            .iter()
            .map(|x| x.to_bits())
            .collect();
        assert_eq!(bits, want);
        assert!(v[3].is_nan());
    }

    #[test]
    fn final_scores_formula_and_clamp() {
        let s = final_scores(&[2.0, 2.0], &[0.5, 7.0], &[0.5, 1.0], 1.0).unwrap();
        assert!((s[0] - 1.5).abs() < 1e-12);
        assert!((s[1] - 4.0).abs() < 1e-12);
        assert!(final_scores(&[1.0], &[], &[1.0], 1.0).is_err());
    }

    #[test]
    fn rrf_orders_and_dedups() {
        let fused = rrf_fuse(&[vec![1, 2, 3, 1], vec![3, 2]], &[1.0, 1.0], 60.0).unwrap();
        let ids: Vec<i64> = fused.iter().map(|p| p.0).collect();
        // 2 and 3 are both in two lanes with rank sums 1+1 and 2+0; 1/(61+1)+1/(61+1) vs
        // 1/(63)+1/(61): 3 wins narrowly.
        assert_eq!(ids, vec![3, 2, 1]);
        let one = fused.iter().find(|p| p.0 == 1).unwrap().1;
        assert!((one - 1.0 / 61.0).abs() < 1e-12);
        assert!(rrf_fuse(&[vec![1]], &[], 60.0).is_err());
        assert!(rrf_fuse(&[vec![1]], &[1.0], f64::NAN).is_err());
    }

    #[test]
    fn rrf_ties_break_by_id() {
        let fused = rrf_fuse(&[vec![9], vec![4]], &[1.0, 1.0], 60.0).unwrap();
        assert_eq!(fused.iter().map(|p| p.0).collect::<Vec<_>>(), vec![4, 9]);
    }
}
