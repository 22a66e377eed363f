//! Greedy packing of scored items into a token budget.
//!
//! Invariants:
//! - The costs charged for the chosen items never sum above `budget` (sums are computed in
//!   `i128`, so no overflow can let an item through).
//! - Items are considered best score first ([`crate::score::cmp_desc`]: NaN last), ties by the
//!   lower index; the output lists chosen indices in that order.
//! - An item that does not fit is skipped and later, smaller items may still fit; this trades
//!   strict rank order for filling the budget, which is what a context window wants.
//! - `budget <= 0` chooses nothing; an item of 0 tokens always fits a positive budget.
//!
//! [`Runs`] describe items that continue one another (consecutive sentences of one message): an
//! item packed next to an already chosen neighbour is rendered under that neighbour's header, so it
//! is charged its `joined` count instead of its full count. The caller renders runs that way and
//! checks the exact count of what it renders.
//!
//! [`Groups`] describe a header that chosen items share (the day of a transcript's lines): the first
//! chosen item of a group also pays the group's cost, the others do not, since the caller renders
//! the header once, before the group's first item ([`pack_grouped`]). An item may belong to a group
//! of each of several groupings (a line's day, and its speaker's full name, each written once).

use crate::error::{same_len, CoreError};
use crate::score::cmp_desc;

/// Which items continue which: `prev[i]` is the item whose text item `i` directly follows, or -1;
/// `joined[i]` is what item `i` costs when packed next to a chosen neighbour, at most its full
/// count. Every item is the `prev` of at most one other.
#[derive(Debug, Clone, Copy)]
pub struct Runs<'a> {
    pub prev: &'a [i64],
    pub joined: &'a [i64],
}

/// Which items share a header: `of[i]` is item `i`'s group (an index into `cost`) or -1 for none;
/// `cost[g]` is what group `g`'s header costs, charged once, to the first chosen item of the group.
#[derive(Debug, Clone, Copy)]
pub struct Groups<'a> {
    pub of: &'a [i64],
    pub cost: &'a [i64],
}

fn invalid(reason: &'static str) -> CoreError {
    CoreError::InvalidArgument {
        name: "runs",
        reason,
    }
}

/// Each item's group as an index, once `groups` are checked.
fn group_of(groups: &Groups<'_>, n: usize) -> Result<Vec<Option<usize>>, CoreError> {
    let bad = |reason| CoreError::InvalidArgument {
        name: "groups",
        reason,
    };
    same_len("token_counts", n, "groups.of", groups.of.len())?;
    if groups.cost.iter().any(|&c| c < 0) {
        return Err(bad("group costs must not be negative"));
    }
    groups
        .of
        .iter()
        .map(|&g| match g {
            -1 => Ok(None),
            g => usize::try_from(g)
                .ok()
                .filter(|&g| g < groups.cost.len())
                .map(Some)
                .ok_or(bad("a group must be -1 or an index into the group costs")),
        })
        .collect()
}

/// Neighbour links of valid `runs`: (prev, next) per item, `usize::MAX` for none.
fn links(runs: &Runs<'_>, token_counts: &[i64]) -> Result<(Vec<usize>, Vec<usize>), CoreError> {
    let n = token_counts.len();
    same_len("token_counts", n, "runs.prev", runs.prev.len())?;
    same_len("token_counts", n, "runs.joined", runs.joined.len())?;
    let mut prev = vec![usize::MAX; n];
    let mut next = vec![usize::MAX; n];
    for (i, &p) in runs.prev.iter().enumerate() {
        if runs.joined[i] < 0 || runs.joined[i] > token_counts[i] {
            return Err(invalid("joined counts must lie in 0..=token count"));
        }
        if p == -1 {
            continue;
        }
        let p = usize::try_from(p).map_err(|_| invalid("prev must be -1 or an item index"))?;
        if p >= n || p == i {
            return Err(invalid("prev must be -1 or another item's index"));
        }
        if next[p] != usize::MAX {
            return Err(invalid("an item is the prev of two items"));
        }
        prev[i] = p;
        next[p] = i;
    }
    Ok((prev, next))
}

/// Chooses indices of items to include; see the module docs for the rules.
///
/// # Errors
/// [`CoreError::LengthMismatch`] when the slices differ in length;
/// [`CoreError::NegativeTokenCount`] when a count is below zero;
/// [`CoreError::InvalidArgument`] when `runs` is malformed.
pub fn pack(
    token_counts: &[i64],
    scores: &[f64],
    budget: i64,
    runs: Option<Runs<'_>>,
) -> Result<Vec<usize>, CoreError> {
    pack_grouped(token_counts, scores, budget, runs, &[])
}

/// [`pack`] where chosen items of a group share its header: an item is charged its count (or its
/// joined count) plus, for each of the `groupings` in which no item of its group was chosen before
/// it, the group's cost.
///
/// # Errors
/// As [`pack`]; also [`CoreError::InvalidArgument`] when a grouping is malformed (a length other
/// than the items', a group out of range, a negative cost).
pub fn pack_grouped(
    token_counts: &[i64],
    scores: &[f64],
    budget: i64,
    runs: Option<Runs<'_>>,
    groupings: &[Groups<'_>],
) -> Result<Vec<usize>, CoreError> {
    same_len("token_counts", token_counts.len(), "scores", scores.len())?;
    if let Some((index, &value)) = token_counts.iter().enumerate().find(|(_, c)| **c < 0) {
        return Err(CoreError::NegativeTokenCount { index, value });
    }
    let (prev, next) = match &runs {
        Some(r) => links(r, token_counts)?,
        None => (Vec::new(), Vec::new()),
    };
    let groups = groupings
        .iter()
        .map(|g| group_of(g, token_counts.len()))
        .collect::<Result<Vec<_>, _>>()?;
    let mut opened: Vec<Vec<bool>> = groupings
        .iter()
        .map(|g| vec![false; g.cost.len()])
        .collect();
    let mut headers = Vec::with_capacity(groupings.len());
    if budget <= 0 {
        return Ok(Vec::new());
    }
    let mut order: Vec<usize> = (0..scores.len()).collect();
    // Stable sort keeps the lower index first among equal scores.
    order.sort_by(|&a, &b| cmp_desc(scores[a], scores[b]));
    let budget = i128::from(budget);
    let any_free = token_counts.contains(&0) || runs.is_some_and(|r| r.joined.contains(&0));
    // A header only adds to an item's charge, so an item is free only where its count is.
    let mut picked = vec![false; token_counts.len()];
    let is_picked = |picked: &[bool], j: usize| j != usize::MAX && picked[j];
    let mut used: i128 = 0;
    let mut chosen = Vec::new();
    for i in order {
        let joins = runs.is_some() && (is_picked(&picked, prev[i]) || is_picked(&picked, next[i]));
        let mut cost = i128::from(match runs {
            Some(r) if joins => r.joined[i],
            _ => token_counts[i],
        });
        // the groups (one per grouping at most) whose headers this item would open
        headers.clear();
        for (k, group) in groups.iter().enumerate() {
            if let Some(g) = group[i].filter(|&g| !opened[k][g]) {
                cost += i128::from(groupings[k].cost[g]);
                headers.push((k, g));
            }
        }
        if used + cost <= budget {
            used += cost;
            picked[i] = true;
            for &(k, g) in &headers {
                opened[k][g] = true;
            }
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
        let chosen = pack(&[8, 5, 3], &[0.5, 0.9, 0.1], 9, None).unwrap();
        assert_eq!(chosen, vec![1, 2]);
    }

    #[test]
    fn ties_by_index_and_nan_last() {
        let chosen = pack(&[1, 1, 1, 1], &[f64::NAN, 1.0, 1.0, -3.0], 10, None).unwrap();
        assert_eq!(chosen, vec![1, 2, 3, 0]);
    }

    #[test]
    fn empty_and_nonpositive_budget() {
        assert!(pack(&[1], &[1.0], 0, None).unwrap().is_empty());
        assert!(pack(&[1], &[1.0], -5, None).unwrap().is_empty());
        assert!(pack(&[], &[], 10, None).unwrap().is_empty());
    }

    #[test]
    fn errors() {
        assert!(matches!(
            pack(&[1, 2], &[1.0], 5, None),
            Err(CoreError::LengthMismatch { .. })
        ));
        assert_eq!(
            pack(&[1, -2], &[1.0, 2.0], 5, None),
            Err(CoreError::NegativeTokenCount {
                index: 1,
                value: -2
            })
        );
    }

    #[test]
    fn a_run_member_next_to_a_chosen_neighbour_pays_its_joined_count() {
        // Items 0 and 1 are consecutive sentences (1 follows 0); 2 stands alone.
        let runs = Runs {
            prev: &[-1, 0, -1],
            joined: &[6, 4, 7],
        };
        // Without runs only 0 (10) fits a budget of 15 besides nothing else of 10.
        assert_eq!(
            pack(&[10, 10, 10], &[0.9, 0.8, 0.7], 15, None).unwrap(),
            vec![0]
        );
        // With them, 1 joins 0 for 4 tokens; 2 (10) no longer fits the remaining 1.
        assert_eq!(
            pack(&[10, 10, 10], &[0.9, 0.8, 0.7], 15, Some(runs)).unwrap(),
            vec![0, 1]
        );
        // The neighbour may come later: 1 is chosen first at full price, then 0 joins it.
        assert_eq!(
            pack(&[10, 10, 10], &[0.8, 0.9, 0.7], 16, Some(runs)).unwrap(),
            vec![1, 0]
        );
    }

    #[test]
    fn malformed_runs_are_rejected() {
        let bad = |prev: &[i64], joined: &[i64]| {
            pack(&[5, 5], &[1.0, 0.5], 10, Some(Runs { prev, joined })).unwrap_err()
        };
        assert!(matches!(
            bad(&[-1, 0], &[5]),
            CoreError::LengthMismatch { .. }
        ));
        assert!(matches!(
            bad(&[-1, 0], &[6, 5]),
            CoreError::InvalidArgument { .. }
        ));
        assert!(matches!(
            bad(&[-1, 1], &[5, 5]),
            CoreError::InvalidArgument { .. }
        ));
        assert!(matches!(
            bad(&[-1, 7], &[5, 5]),
            CoreError::InvalidArgument { .. }
        ));
        assert!(matches!(
            bad(&[-2, 0], &[5, 5]),
            CoreError::InvalidArgument { .. }
        ));
        assert!(matches!(
            pack(
                &[5, 5, 5],
                &[1.0; 3],
                10,
                Some(Runs {
                    prev: &[-1, 0, 0],
                    joined: &[5, 5, 5]
                })
            ),
            Err(CoreError::InvalidArgument { .. })
        ));
    }

    #[test]
    fn the_first_chosen_item_of_a_group_pays_its_header() {
        // Items 0 and 2 share group 0 (header 4); 1 is in group 1 (header 4); 3 is in none.
        let groups = Groups {
            of: &[0, 1, 0, -1],
            cost: &[4, 4],
        };
        let scores = [0.9, 0.7, 0.8, 0.6];
        // 0 pays 5 + 4, 2 shares the open header for 5, 1 would pay 9 more (23), 3 pays 5.
        assert_eq!(
            pack_grouped(&[5; 4], &scores, 20, None, &[groups]).unwrap(),
            vec![0, 2, 3]
        );
        // Without groups no header is charged.
        assert_eq!(
            pack_grouped(&[5; 4], &scores, 20, None, &[]).unwrap(),
            vec![0, 2, 1, 3]
        );
        // A run member that joins its neighbour still opens its own group, and pays for it.
        let runs = Runs {
            prev: &[-1, 0],
            joined: &[5, 2],
        };
        let groups = Groups {
            of: &[-1, 0],
            cost: &[3],
        };
        let grouped = |budget| pack_grouped(&[5, 5], &[0.9, 0.8], budget, Some(runs), &[groups]);
        assert_eq!(grouped(9).unwrap(), vec![0]);
        assert_eq!(grouped(10).unwrap(), vec![0, 1]);
    }

    #[test]
    fn malformed_groups_are_rejected() {
        let bad = |of: &[i64], cost: &[i64]| {
            let ok = Groups {
                of: &[-1, -1],
                cost: &[],
            };
            pack_grouped(&[5, 5], &[1.0, 0.5], 10, None, &[ok, Groups { of, cost }]).unwrap_err()
        };
        assert!(matches!(bad(&[0], &[1]), CoreError::LengthMismatch { .. }));
        assert!(matches!(
            bad(&[0, 1], &[1]),
            CoreError::InvalidArgument { .. }
        ));
        assert!(matches!(
            bad(&[0, -2], &[1]),
            CoreError::InvalidArgument { .. }
        ));
        assert!(matches!(
            bad(&[0, 0], &[-1]),
            CoreError::InvalidArgument { .. }
        ));
    }

    #[test]
    fn an_item_pays_the_header_of_each_grouping_it_opens() {
        // Lines of days 0, 0, 1 by speakers 0, 1, 0: a day's header costs 3, a speaker's full name 2.
        let days = Groups {
            of: &[0, 0, 1],
            cost: &[3, 3],
        };
        let speakers = Groups {
            of: &[0, 1, 0],
            cost: &[2, 2],
        };
        let scores = [0.9, 0.8, 0.7];
        // 0 opens day 0 and speaker 0 (10), 1 opens speaker 1 (7), 2 opens day 1 only (8).
        let packed = |budget| pack_grouped(&[5; 3], &scores, budget, None, &[days, speakers]);
        assert_eq!(packed(24).unwrap(), vec![0, 1]);
        assert_eq!(packed(25).unwrap(), vec![0, 1, 2]);
        // The order of the groupings does not matter.
        assert_eq!(
            pack_grouped(&[5; 3], &scores, 24, None, &[speakers, days]).unwrap(),
            vec![0, 1]
        );
    }

    #[test]
    fn huge_counts_do_not_overflow() {
        let chosen = pack(&[i64::MAX, i64::MAX, 1], &[3.0, 2.0, 1.0], i64::MAX, None).unwrap();
        assert_eq!(chosen, vec![0]);
    }
}
