//! The ranking of one Context after its lanes, in one call: reciprocal-rank fusion, the score
//! terms and boosts, spreading to neighbouring turns, final scores, near-duplicates and packing.
//!
//! [`ChunkTable`] holds what ranking needs of every chunk of one Brain (time, speaker, source,
//! trust, token counts, the chunk before it in its Record, its Record's first and last chunk, the
//! chunks added right before and after it, and its word shingles), so a request crosses into Rust
//! once with its lanes and leaves with its candidates and passages.
//!
//! Invariants:
//! - The passages' charged counts (a passage's first chunk at its full count, each further chunk
//!   of the run at its joined count) never sum above the budget ([`crate::pack::pack`]).
//! - Candidates come best first (scores descending, NaN last, ties by the lower id); passages by
//!   their best member's score, ties by the lower first id. Equal inputs give equal outputs.
//! - A chunk outside the request's filter or in its excluded set is never a candidate, whatever
//!   its lanes or neighbours say (the lanes are filtered by the caller; spreading is filtered here).
//! - A run (passage) only joins chunks that follow one another in one Record's text; a redacted
//!   chunk always stands alone.

use std::collections::{HashMap, HashSet};

use crate::error::{same_len, CoreError};
use crate::lexical::{jaccard, shingles};
use crate::pack::{pack, Runs};
use crate::score::{cmp_desc, rrf_fuse};

/// No chunk (a link to nothing).
pub const NONE: i64 = -1;

#[derive(Debug, Clone)]
struct Row {
    ts: f64,
    speaker: u32, // 0: none
    source: u32,  // 0: none
    trust: f64,
    tokens: i64,
    joined: i64,
    redacted: bool,
    before: i64,
    first: i64,
    last: i64,
    previous: i64,
    following: i64,
    shingles: Box<[u64]>,
}

/// One new chunk of [`ChunkTable::add`].
#[derive(Debug, Clone)]
pub struct NewChunk<'a> {
    pub id: i64,
    pub ts: f64,
    /// Compared case-insensitively with the words of a query.
    pub speaker: Option<&'a str>,
    pub source: Option<&'a str>,
    pub trust: f64,
    /// Tokens of the chunk's cited form, and of its text after a joining space (at most `tokens`).
    pub tokens: i64,
    pub joined: i64,
    pub redacted: bool,
    /// Its text, for near-duplicate detection.
    pub text: &'a str,
}

/// Ranking metadata of one Brain's chunks. Not synchronised: the caller serialises writes.
#[derive(Debug, Default)]
pub struct ChunkTable {
    rows: HashMap<i64, Row>,
    newest: i64,
    speakers: HashMap<String, u32>,
    sources: HashMap<String, u32>,
}

fn code(names: &mut HashMap<String, u32>, name: Option<&str>) -> u32 {
    match name {
        None => 0,
        Some(name) => {
            let next = names.len() as u32 + 1;
            *names.entry(name.to_owned()).or_insert(next)
        }
    }
}

/// What a request may draw on: chunks said within `[since, until]`, from one of `sources` (names),
/// and not in `excluded`. `None` leaves a condition out.
#[derive(Debug, Clone, Default)]
pub struct Filter {
    pub since: Option<f64>,
    pub until: Option<f64>,
    pub sources: Option<Vec<String>>,
    pub excluded: HashSet<i64>,
}

/// One ranked lane: ids best first with their lane scores. `weight` is its weight in fusion;
/// `score_weight` adds `score_weight * score / best score of the lane` (positive scores only) to a
/// fused chunk, so a lane's confidence counts, not only its order.
#[derive(Debug, Clone)]
pub struct Lane {
    pub hits: Vec<(i64, f64)>,
    pub weight: f64,
    pub score_weight: f64,
}

/// The knobs of [`ChunkTable::rank`] (see `RetrievalConfig` in `retrieval/pipeline.py`).
#[derive(Debug, Clone)]
pub struct Params {
    pub rrf_k: f64,
    pub max_fused: usize,
    pub max_candidates: usize,
    /// Fused score times `1 + speaker_boost` for a chunk whose speaker is one of `named`.
    pub speaker_boost: f64,
    /// Lowercased words of the query.
    pub named: Vec<String>,
    /// Fused score times `1 + time_boost` for a chunk said within one of `focus`, `[start, end)`
    /// Unix seconds (the caller adds any slack).
    pub time_boost: f64,
    pub focus: Vec<(f64, f64)>,
    /// Share of a turn's score that the turns one, two, ... before and after it earn, from the
    /// best `neighbor_sources` chunks, across turns no more than `neighbor_gap` seconds apart.
    pub neighbor_weights: Vec<f64>,
    pub neighbor_sources: usize,
    pub neighbor_gap: f64,
    pub now: f64,
    pub recency_weight: f64,
    pub recency_half_life: f64,
    pub budget: i64,
    pub duplicate_threshold: f64,
}

/// A scored candidate: id, final score, and its rank in each lane (-1 where absent).
#[derive(Debug, Clone, PartialEq)]
pub struct Candidate {
    pub id: i64,
    pub score: f64,
    pub ranks: Vec<i64>,
}

/// Packed evidence: consecutive chunks of one Record in text order, the best member's score, and
/// the tokens charged for it.
#[derive(Debug, Clone, PartialEq)]
pub struct Passage {
    pub ids: Vec<i64>,
    pub score: f64,
    pub charged: i64,
}

#[derive(Debug, Clone, PartialEq, Default)]
pub struct Ranked {
    pub candidates: Vec<Candidate>,
    pub passages: Vec<Passage>,
}

fn invalid(name: &'static str, reason: &'static str) -> CoreError {
    CoreError::InvalidArgument { name, reason }
}

impl ChunkTable {
    pub fn new() -> Self {
        Self {
            newest: NONE,
            ..Self::default()
        }
    }

    pub fn len(&self) -> usize {
        self.rows.len()
    }

    pub fn is_empty(&self) -> bool {
        self.rows.is_empty()
    }

    pub fn contains(&self, id: i64) -> bool {
        self.rows.contains_key(&id)
    }

    /// Appends chunks, in order, to the end of the Brain's sequence (the order Records came in).
    /// Each is its own Record's only chunk until [`Self::link`] says otherwise.
    ///
    /// # Errors
    /// [`CoreError::InvalidArgument`] for an id already held (or repeated), a negative id, or token
    /// counts out of range (`0 <= joined <= tokens`); nothing is added then.
    pub fn add(&mut self, chunks: &[NewChunk<'_>]) -> Result<(), CoreError> {
        let mut fresh = HashSet::with_capacity(chunks.len());
        for c in chunks {
            if c.id < 0 || self.rows.contains_key(&c.id) || !fresh.insert(c.id) {
                return Err(invalid("ids", "must be new, distinct and non-negative"));
            }
            if c.tokens < 0 || c.joined < 0 || c.joined > c.tokens {
                return Err(invalid("tokens", "need 0 <= joined <= tokens"));
            }
        }
        for c in chunks {
            let speaker = code(
                &mut self.speakers,
                c.speaker.map(str::to_lowercase).as_deref(),
            );
            let source = code(&mut self.sources, c.source);
            if let Some(newest) = self.rows.get_mut(&self.newest) {
                newest.following = c.id;
            }
            self.rows.insert(
                c.id,
                Row {
                    ts: c.ts,
                    speaker,
                    source,
                    trust: c.trust,
                    tokens: c.tokens,
                    joined: c.joined,
                    redacted: c.redacted,
                    before: NONE,
                    first: c.id,
                    last: c.id,
                    previous: self.newest,
                    following: NONE,
                    shingles: shingles(c.text).into_boxed_slice(),
                },
            );
            self.newest = c.id;
        }
        Ok(())
    }

    /// Sets, for each held chunk, the chunk right before it in its Record's text and its Record's
    /// first and last chunks (`NONE` for none); unknown ids are skipped.
    ///
    /// # Errors
    /// [`CoreError::LengthMismatch`] when the slices differ in length.
    pub fn link(
        &mut self,
        ids: &[i64],
        before: &[i64],
        first: &[i64],
        last: &[i64],
    ) -> Result<(), CoreError> {
        same_len("ids", ids.len(), "before", before.len())?;
        same_len("ids", ids.len(), "first", first.len())?;
        same_len("ids", ids.len(), "last", last.len())?;
        for (i, id) in ids.iter().enumerate() {
            if let Some(row) = self.rows.get_mut(id) {
                row.before = before[i];
                row.first = first[i];
                row.last = last[i];
            }
        }
        Ok(())
    }

    /// Forgets chunks (unknown ids are ignored), closing the sequence around them.
    pub fn remove(&mut self, ids: &[i64]) {
        for id in ids {
            let Some(row) = self.rows.remove(id) else {
                continue;
            };
            if let Some(p) = self.rows.get_mut(&row.previous) {
                p.following = row.following;
            }
            if let Some(f) = self.rows.get_mut(&row.following) {
                f.previous = row.previous;
            } else {
                self.newest = row.previous;
            }
        }
    }

    /// (tokens, joined) of a held chunk.
    pub fn token_counts(&self, id: i64) -> Option<(i64, i64)> {
        self.rows.get(&id).map(|r| (r.tokens, r.joined))
    }

    /// The chunk right before this one in its Record's text.
    pub fn before(&self, id: i64) -> Option<i64> {
        self.rows.get(&id).map(|r| r.before).filter(|&b| b != NONE)
    }

    fn admits(&self, id: i64, row: &Row, filter: Option<&(Filter, Option<HashSet<u32>>)>) -> bool {
        let Some((f, sources)) = filter else {
            return true;
        };
        !f.excluded.contains(&id)
            && f.since.is_none_or(|s| row.ts >= s)
            && f.until.is_none_or(|u| row.ts <= u)
            && sources.as_ref().is_none_or(|s| s.contains(&row.source))
    }

    /// The candidates and packed passages of one request; see the module docs.
    ///
    /// # Errors
    /// [`CoreError::InvalidArgument`] for a negative or non-finite `rrf_k`, or a
    /// `duplicate_threshold` outside `[0, 1]`.
    pub fn rank(
        &self,
        lanes: &[Lane],
        params: &Params,
        filter: Option<&Filter>,
    ) -> Result<Ranked, CoreError> {
        if !(0.0..=1.0).contains(&params.duplicate_threshold) {
            return Err(invalid("duplicate_threshold", "must be within [0, 1]"));
        }
        let filter = filter.map(|f| {
            let codes = f.sources.as_ref().map(|names| {
                names
                    .iter()
                    .filter_map(|n| self.sources.get(n).copied())
                    .collect::<HashSet<u32>>()
            });
            (f.clone(), codes)
        });
        let ids: Vec<Vec<i64>> = lanes
            .iter()
            .map(|l| l.hits.iter().map(|h| h.0).collect())
            .collect();
        let weights: Vec<f64> = lanes.iter().map(|l| l.weight).collect();
        let mut fused = rrf_fuse(&ids, &weights, params.rrf_k)?;
        fused.truncate(params.max_fused);

        // Score terms: each lane's own score, relative to its best (first occurrence only).
        let terms: Vec<(HashMap<i64, f64>, f64)> = lanes
            .iter()
            .map(|l| {
                let best = l.hits.iter().map(|h| h.1).fold(0.0_f64, f64::max);
                let mut scores = HashMap::with_capacity(l.hits.len());
                for &(id, s) in &l.hits {
                    scores.entry(id).or_insert(s);
                }
                (
                    scores,
                    if best > 0.0 {
                        l.score_weight / best
                    } else {
                        0.0
                    },
                )
            })
            .collect();
        let named: HashSet<u32> = params
            .named
            .iter()
            .filter_map(|w| self.speakers.get(w).copied())
            .collect();
        let speaker_factor = 1.0 + params.speaker_boost;
        let time_factor = 1.0 + params.time_boost;

        let mut chunks: Vec<i64> = Vec::with_capacity(fused.len() * 2);
        let mut base: Vec<f64> = Vec::with_capacity(fused.len() * 2);
        for (id, mut s) in fused {
            let Some(row) = self.rows.get(&id) else {
                continue; // removed since the lane ran
            };
            for (scores, scale) in &terms {
                if let Some(&v) = scores.get(&id) {
                    if v > 0.0 {
                        s += scale * v;
                    }
                }
            }
            if row.speaker != 0 && named.contains(&row.speaker) {
                s *= speaker_factor;
            }
            if params
                .focus
                .iter()
                .any(|&(start, end)| start <= row.ts && row.ts < end)
            {
                s *= time_factor;
            }
            chunks.push(id);
            base.push(s);
        }

        // Spreading to the neighbouring turns of the best chunks.
        if params.neighbor_weights.iter().any(|&w| w != 0.0) && !chunks.is_empty() {
            let mut extra: Vec<(i64, f64)> = Vec::new();
            let mut extra_at: HashMap<i64, usize> = HashMap::new();
            for (&id, &s) in chunks.iter().zip(&base).take(params.neighbor_sources) {
                let row = &self.rows[&id];
                for backwards in [true, false] {
                    let step = |r: &Row| if backwards { r.previous } else { r.following };
                    let end = |r: &Row| if backwards { r.first } else { r.last };
                    let mut other = self.rows.get(&end(row)).map_or(NONE, step);
                    for &weight in &params.neighbor_weights {
                        let Some(o) = self.rows.get(&other) else {
                            break;
                        };
                        if o.source != row.source || (o.ts - row.ts).abs() > params.neighbor_gap {
                            break;
                        }
                        if self.admits(other, o, filter.as_ref()) {
                            let at = *extra_at.entry(other).or_insert_with(|| {
                                extra.push((other, 0.0));
                                extra.len() - 1
                            });
                            extra[at].1 += weight * s;
                        }
                        other = self.rows.get(&end(o)).map_or(NONE, step);
                    }
                }
            }
            let position: HashMap<i64, usize> =
                chunks.iter().enumerate().map(|(i, &id)| (id, i)).collect();
            for (id, bonus) in extra {
                if let Some(&i) = position.get(&id) {
                    base[i] += bonus;
                } else {
                    chunks.push(id);
                    base.push(bonus);
                }
            }
        }

        // Final scores: trust and a small recency weight.
        let decay = std::f64::consts::LN_2 / params.recency_half_life.max(f64::MIN_POSITIVE);
        let mut scored: Vec<(i64, f64)> = chunks
            .iter()
            .zip(&base)
            .map(|(id, &b)| {
                let row = &self.rows[id];
                let recency = (-decay * (params.now - row.ts).max(0.0))
                    .exp()
                    .clamp(0.0, 1.0);
                (
                    *id,
                    b * row.trust * params.recency_weight.mul_add(recency, 1.0),
                )
            })
            .collect();
        scored.sort_by(|a, b| cmp_desc(a.1, b.1).then(a.0.cmp(&b.0)));
        scored.truncate(params.max_candidates);

        let ranks: Vec<HashMap<i64, i64>> = ids
            .iter()
            .map(|lane| {
                let mut m = HashMap::with_capacity(lane.len());
                for (r, &id) in lane.iter().enumerate() {
                    m.entry(id).or_insert(r as i64);
                }
                m
            })
            .collect();
        let candidates: Vec<Candidate> = scored
            .iter()
            .map(|&(id, score)| Candidate {
                id,
                score,
                ranks: ranks
                    .iter()
                    .map(|m| m.get(&id).copied().unwrap_or(NONE))
                    .collect(),
            })
            .collect();
        let passages = self.pack_head(&scored, params);
        Ok(Ranked {
            candidates,
            passages,
        })
    }

    /// Near-duplicates dropped and the budget packed, over the head of the ranking: only what
    /// could be packed (about twice the budget, at least 20 chunks) is compared.
    fn pack_head(&self, scored: &[(i64, f64)], params: &Params) -> Vec<Passage> {
        let limit = 2 * params.budget.max(0);
        let (mut head, mut total) = (0, 0_i64);
        while head < scored.len() && (total < limit || head < 20) {
            total += self.rows[&scored[head].0].tokens;
            head += 1;
        }
        let mut pool: Vec<(i64, f64)> = Vec::with_capacity(head);
        for (i, &(id, s)) in scored[..head].iter().enumerate() {
            let mine = &self.rows[&id].shingles;
            let duplicate = scored[..i].iter().any(|(earlier, _)| {
                let theirs = &self.rows[earlier].shingles;
                let (lo, hi) = (mine.len().min(theirs.len()), mine.len().max(theirs.len()));
                (hi == 0 || lo as f64 >= params.duplicate_threshold * hi as f64)
                    && jaccard(mine, theirs) >= params.duplicate_threshold
            });
            if !duplicate {
                pool.push((id, s));
            }
        }
        let position: HashMap<i64, usize> = pool
            .iter()
            .enumerate()
            .filter(|(_, (id, _))| !self.rows[id].redacted)
            .map(|(i, (id, _))| (*id, i))
            .collect();
        let prev: Vec<i64> = pool
            .iter()
            .map(|(id, _)| {
                let row = &self.rows[id];
                if row.redacted {
                    return NONE;
                }
                position.get(&row.before).map_or(NONE, |&i| i as i64)
            })
            .collect();
        let tokens: Vec<i64> = pool.iter().map(|(id, _)| self.rows[id].tokens).collect();
        let joined: Vec<i64> = pool.iter().map(|(id, _)| self.rows[id].joined).collect();
        let scores: Vec<f64> = pool.iter().map(|p| p.1).collect();
        let runs = Runs {
            prev: &prev,
            joined: &joined,
        };
        let chosen = pack(&tokens, &scores, params.budget, Some(runs)).unwrap_or_default();
        let picked: HashSet<usize> = chosen.iter().copied().collect();
        let mut follower: HashMap<usize, usize> = HashMap::new();
        for (i, &p) in prev.iter().enumerate() {
            if p >= 0 && picked.contains(&i) {
                follower.insert(p as usize, i);
            }
        }
        let mut out: Vec<Passage> = Vec::new();
        for &i in &chosen {
            if prev[i] >= 0 && picked.contains(&(prev[i] as usize)) {
                continue; // inside a run that starts earlier
            }
            let mut ids = vec![pool[i].0];
            let (mut score, mut charged) = (pool[i].1, tokens[i]);
            let mut at = i;
            while let Some(&next) = follower.get(&at) {
                ids.push(pool[next].0);
                score = score.max(pool[next].1);
                charged += joined[next];
                at = next;
            }
            out.push(Passage {
                ids,
                score,
                charged,
            });
        }
        out.sort_by(|a, b| cmp_desc(a.score, b.score).then(a.ids[0].cmp(&b.ids[0])));
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn chunk(id: i64, ts: f64, speaker: &'static str, text: &'static str) -> NewChunk<'static> {
        NewChunk {
            id,
            ts,
            speaker: Some(speaker),
            source: Some("chat"),
            trust: 1.0,
            tokens: 10,
            joined: 6,
            redacted: false,
            text,
        }
    }

    fn params(budget: i64) -> Params {
        Params {
            rrf_k: 10.0,
            max_fused: 150,
            max_candidates: 150,
            speaker_boost: 0.0,
            named: Vec::new(),
            time_boost: 0.0,
            focus: Vec::new(),
            neighbor_weights: Vec::new(),
            neighbor_sources: 30,
            neighbor_gap: 3600.0,
            now: 0.0,
            recency_weight: 0.0,
            recency_half_life: 1.0,
            budget,
            duplicate_threshold: 0.9,
        }
    }

    fn lane(ids: &[i64]) -> Lane {
        Lane {
            hits: ids.iter().map(|&i| (i, 1.0)).collect(),
            weight: 1.0,
            score_weight: 0.0,
        }
    }

    fn table() -> ChunkTable {
        let mut t = ChunkTable::new();
        t.add(&[
            chunk(1, 0.0, "Ann", "we went hiking in the alps last summer"),
            chunk(2, 60.0, "Bob", "which mountain did you climb there"),
            chunk(3, 120.0, "Ann", "the matterhorn, it was so cold at the top"),
            chunk(
                4,
                9000.0,
                "Bob",
                "unrelated talk about cooking pasta tonight",
            ),
        ])
        .unwrap();
        t
    }

    #[test]
    fn fuses_and_orders() {
        let t = table();
        let r = t
            .rank(&[lane(&[3, 1]), lane(&[1])], &params(100), None)
            .unwrap();
        assert_eq!(
            r.candidates.iter().map(|c| c.id).collect::<Vec<_>>(),
            vec![1, 3]
        );
        assert_eq!(r.candidates[0].ranks, vec![1, 0]);
        assert_eq!(r.candidates[1].ranks, vec![0, NONE]);
        assert_eq!(r.passages.len(), 2);
    }

    #[test]
    fn spreading_reaches_neighbours_within_the_gap_only() {
        let t = table();
        let mut p = params(100);
        p.neighbor_weights = vec![0.3, 0.3];
        let r = t.rank(&[lane(&[3])], &p, None).unwrap();
        let ids: Vec<i64> = r.candidates.iter().map(|c| c.id).collect();
        // 2 and 1 precede 3 within an hour; 4 is 2.5 hours later.
        assert_eq!(ids, vec![3, 1, 2]);
        let filtered = Filter {
            excluded: [1].into_iter().collect(),
            ..Filter::default()
        };
        let r = t.rank(&[lane(&[3])], &p, Some(&filtered)).unwrap();
        assert_eq!(
            r.candidates.iter().map(|c| c.id).collect::<Vec<_>>(),
            vec![3, 2]
        );
    }

    #[test]
    fn speaker_and_time_boosts() {
        let t = table();
        let mut p = params(100);
        p.speaker_boost = 0.5;
        p.named = vec!["bob".into()];
        let r = t.rank(&[lane(&[1, 2])], &p, None).unwrap();
        assert_eq!(r.candidates[0].id, 2);
        let mut p = params(100);
        p.time_boost = 1.0;
        p.focus = vec![(100.0, 200.0)];
        let r = t.rank(&[lane(&[1, 3])], &p, None).unwrap();
        assert_eq!(r.candidates[0].id, 3);
    }

    #[test]
    fn runs_join_under_one_header_and_duplicates_drop() {
        let mut t = ChunkTable::new();
        t.add(&[
            chunk(1, 0.0, "Ann", "first sentence of a long message here"),
            chunk(2, 0.0, "Ann", "second sentence of the same message"),
            chunk(3, 0.0, "Ann", "first sentence of a long message here"),
        ])
        .unwrap();
        t.link(&[1, 2], &[NONE, 1], &[1, 1], &[2, 2]).unwrap();
        let r = t.rank(&[lane(&[1, 3, 2])], &params(16), None).unwrap();
        assert_eq!(
            r.passages,
            vec![Passage {
                ids: vec![1, 2],
                score: r.passages[0].score,
                charged: 16
            }]
        );
        t.remove(&[2]);
        assert_eq!(t.len(), 2);
        assert!(t.before(2).is_none());
    }

    #[test]
    fn rejects_bad_input() {
        let mut t = table();
        assert!(t.add(&[chunk(1, 0.0, "Ann", "again")]).is_err());
        assert!(t.link(&[1], &[], &[1], &[1]).is_err());
        let mut p = params(10);
        p.duplicate_threshold = 2.0;
        assert!(t.rank(&[], &p, None).is_err());
        p.duplicate_threshold = 0.9;
        p.rrf_k = -1.0;
        assert!(t.rank(&[lane(&[1])], &p, None).is_err());
    }
}
