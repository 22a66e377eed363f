//! Greedy packing of scored items into a token budget.
//!
//! Invariants:
//! - The chosen items' token counts never sum above `budget` (sums are computed in `i128`, so
//!   no overflow can let an item through).
//! - Items are considered best score first ([`crate::score::cmp_desc`]: NaN last), ties by the
//!   lower index; the output lists chosen indices in that order.
//! - An item that does not fit is skipped and later, smaller items may still fit; this trades
//!   strict rank order for filling the budget, which is what a context window wants.
//! - `budget <= 0` chooses nothing; an item of 0 tokens always fits a positive budget.

use crate::error::{same_len, CoreError};
use crate::score::cmp_desc;

/// Chooses indices of items to include; see the module docs for the rules.
///
/// # Errors
/// [`CoreError::LengthMismatch`] when the slices differ in length;
/// [`CoreError::NegativeTokenCount`] when a count is below zero.
pub fn pack(token_counts: &[i64], scores: &[f64], budget: i64) -> Result<Vec<usize>, CoreError> {
    same_len("token_counts", token_counts.len(), "scores", scores.len())?;
    if let Some((index, &value)) = token_counts.iter().enumerate().find(|(_, c)| **c < 0) {
        return Err(CoreError::NegativeTokenCount { index, value });
    }
    if budget <= 0 {
        return Ok(Vec::new());
    }
    let mut order: Vec<usize> = (0..scores.len()).collect();
    // Stable sort keeps the lower index first among equal scores.
    order.sort_by(|&a, &b| cmp_desc(scores[a], scores[b]));
    let budget = i128::from(budget);
    let any_free = token_counts.contains(&0);
    let mut used: i128 = 0;
    let mut chosen = Vec::new();
    for i in order {
        let cost = i128::from(token_counts[i]);
        if used + cost <= budget {
            used += cost;
            chosen.push(i);
            if used == budget && !any_free {
                // Full, and no zero-cost item could still fit.
                break;
            }
        }
    }
    Ok(chosen)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn greedy_skips_and_continues() {
        // Best item (1) fits, item 0 does not, item 2 still does.
        let chosen = pack(&[8, 5, 3], &[0.5, 0.9, 0.1], 9).unwrap();
        assert_eq!(chosen, vec![1, 2]);
    }

    #[test]
    fn ties_by_index_and_nan_last() {
        let chosen = pack(&[1, 1, 1, 1], &[f64::NAN, 1.0, 1.0, -3.0], 10).unwrap();
        assert_eq!(chosen, vec![1, 2, 3, 0]);
    }

    #[test]
    fn empty_and_nonpositive_budget() {
        assert!(pack(&[1], &[1.0], 0).unwrap().is_empty());
        assert!(pack(&[1], &[1.0], -5).unwrap().is_empty());
        assert!(pack(&[], &[], 10).unwrap().is_empty());
    }

    #[test]
    fn errors() {
        assert!(matches!(
            pack(&[1, 2], &[1.0], 5),
            Err(CoreError::LengthMismatch { .. })
        ));
        assert_eq!(
            pack(&[1, -2], &[1.0, 2.0], 5),
            Err(CoreError::NegativeTokenCount {
                index: 1,
                value: -2
            })
        );
    }

    #[test]
    fn huge_counts_do_not_overflow() {
        let chosen = pack(&[i64::MAX, i64::MAX, 1], &[3.0, 2.0, 1.0], i64::MAX).unwrap();
        assert_eq!(chosen, vec![0]);
    }
}
