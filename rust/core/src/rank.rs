//! The facts retrieval ranks chunks by, and the ranking pass that runs after the lanes.
//!
//! [`ChunkTable`] holds, for every chunk of one Brain's index, what ranking reads: when it was said,
//! its source and speaker, its trust multiplier, its token counts, the chunk before it in its
//! Record's text, its Record's first and last chunk, and the chunks of its source said right before
//! and after it (a conversation's order: by time, then by the order chunks came in, however many
//! clients post it at once and whatever other sources write meanwhile). [`ChunkTable::rank`] then
//! scores the
//! fused lane results in one call: score-aware fusion terms, the speaker and time boosts, score
//! spread to neighbouring turns, recency and trust, best first. Done per candidate in Python it
//! was the largest part of a fast Context after the question's embedding. [`ChunkTable::turns`]
//! names the turn packing counts each chunk in (a speaker's run of Records where their times order
//! it), so that the budget reaches more turns.
//!
//! Invariants:
//! - One entry per id: adding an id that is present is refused, so links are never overwritten.
//! - Removing a chunk splices it out of its source's list, as if it had never been added; unknown
//!   ids are ignored. A source or speaker name no live chunk carries is dropped with
//!   its last chunk: a forgotten Record leaves none of its text behind.
//! - [`ChunkTable::rank`] gives the same scores, in the same order, as the Python it replaces:
//!   the same floating-point operations in the same order (`tests/unit/test_rank_native.py`, which
//!   also holds the reference of [`ChunkTable::turns`]).
//! - All methods take `&self`: state sits behind one `RwLock`.

use std::cmp::Ordering;
use std::collections::{BTreeSet, HashSet};
use std::ops::Bound;
use std::sync::Arc;

use rustc_hash::FxHashMap;

use crate::error::CoreError;
use crate::score::{cmp_desc, final_score};
use crate::shared::Shared;

/// A chunk as [`ChunkTable::add`] takes it.
#[derive(Debug, Clone, PartialEq)]
pub struct NewChunk {
    pub id: i64,
    /// When it was said, in POSIX seconds.
    pub ts: f64,
    pub source: Option<String>,
    /// Lowercased by the caller, as the names a query is matched against are.
    pub speaker: Option<String>,
    /// The multiplier of its source's trust level.
    pub trust: f64,
    /// Tokens of its cited form.
    pub tokens: i64,
    /// Tokens it adds after a joining space to a passage that holds its neighbour.
    pub joined: i64,
    /// Tokens of its line in a transcript where an earlier line names its day (its cited form
    /// without the day).
    pub line: i64,
}

#[derive(Debug)]
struct Entry {
    ts: f64,
    source: Option<Arc<str>>,
    speaker: Option<Arc<str>>,
    trust: f64,
    tokens: i64,
    joined: i64,
    line: i64,
    before: Option<i64>,
    /// Its Record's first and last chunk.
    record: (i64, i64),
    /// The chunks of the same source right before and after it (see [`Place`]).
    previous: Option<i64>,
    following: Option<i64>,
}

/// A chunk's place in its source's list: by when it was said, then by id, the order chunks come in
/// (the index gives ids in that order). A conversation posted by several clients at once arrives out
/// of order; its times still order it. Turns said at one time (a session's shared date) keep the order
/// they came in.
#[derive(Debug, Clone, Copy)]
struct Place {
    ts: f64,
    id: i64,
}

impl Ord for Place {
    fn cmp(&self, other: &Self) -> Ordering {
        self.ts.total_cmp(&other.ts).then(self.id.cmp(&other.id))
    }
}

impl PartialOrd for Place {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}

impl PartialEq for Place {
    fn eq(&self, other: &Self) -> bool {
        self.cmp(other) == Ordering::Equal
    }
}

impl Eq for Place {}

#[derive(Default)]
struct Inner {
    entries: FxHashMap<i64, Entry>,
    /// Each source's chunks in order: where a new chunk goes in its list.
    order: FxHashMap<Option<Arc<str>>, BTreeSet<Place>>,
    // One copy of each source and speaker name, shared by its chunks, so that comparing two
    // chunks' sources is a pointer comparison in the common case.
    names: HashSet<Arc<str>>,
}

impl Inner {
    fn intern(&mut self, name: Option<String>) -> Option<Arc<str>> {
        let name = name?;
        if let Some(known) = self.names.get(name.as_str()) {
            return Some(Arc::clone(known));
        }
        let shared: Arc<str> = Arc::from(name);
        self.names.insert(Arc::clone(&shared));
        Some(shared)
    }

    fn release(&mut self, name: Option<Arc<str>>) {
        if let Some(name) = name {
            // The set's copy and this one: no chunk carries the name any more.
            if Arc::strong_count(&name) == 2 {
                self.names.remove(&name);
            }
        }
    }
}

/// Which chunks may receive score spread from a neighbour: those a request's filter admits (said
/// within `[since, until]`, from one of `sources`; `None` leaves a condition out), less `excluded`
/// (what the request may not see). Judged on the table's own facts, so a filter that admits most of a
/// large Brain costs nothing to pass in.
#[derive(Debug, Clone, Copy)]
pub struct Admits<'a> {
    pub since: Option<f64>,
    pub until: Option<f64>,
    pub sources: Option<&'a HashSet<String>>,
    pub excluded: &'a HashSet<i64>,
}

impl Admits<'_> {
    /// Admits every chunk.
    pub fn all(excluded: &HashSet<i64>) -> Admits<'_> {
        Admits {
            since: None,
            until: None,
            sources: None,
            excluded,
        }
    }

    fn admits(&self, id: i64, entry: &Entry) -> bool {
        self.since.is_none_or(|since| entry.ts >= since)
            && self.until.is_none_or(|until| entry.ts <= until)
            && self
                .sources
                .is_none_or(|sources| entry.source.as_deref().is_some_and(|s| sources.contains(s)))
            && !self.excluded.contains(&id)
    }
}

/// One ranking pass's inputs. Weights are the retrieval configuration's, already combined where
/// the Python did so (`lexical_weight` is divided by the best lexical score, boosts are `1 + boost`).
#[derive(Debug, Clone, Copy)]
pub struct RankRequest<'a> {
    /// Fused (id, score) pairs, best first.
    pub fused: &'a [(i64, f64)],
    /// The vector lane's (id, cosine) hits.
    pub vector: &'a [(i64, f64)],
    /// The lexical lane's (id, BM25) hits.
    pub lexical: &'a [(i64, f64)],
    pub vector_weight: f64,
    pub lexical_weight: f64,
    /// Lowercased speakers the query names; their chunks' scores are multiplied by `speaker_boost`.
    pub named: &'a HashSet<String>,
    pub speaker_boost: f64,
    /// Lowercased speakers who talk with the named ones. With `named` not empty, a chunk of any other
    /// speaker (a stranger to the people the query names) is multiplied by `stranger_factor`.
    pub kin: &'a HashSet<String>,
    pub stranger_factor: f64,
    /// `[start, end)` periods in POSIX seconds; chunks said within one are multiplied by `time_boost`.
    pub focus: &'a [(f64, f64)],
    pub time_boost: f64,
    /// The share of a chunk's score the turns one, two, ... turns away earn.
    pub neighbor_weights: &'a [f64],
    /// Turns further apart in time than this (seconds) are not neighbours.
    pub neighbor_gap: f64,
    /// What the following turns earn, relative to the preceding ones.
    pub next_factor: f64,
    /// Only this many of the best fused chunks spread score.
    pub neighbor_sources: usize,
    pub admits: Admits<'a>,
    /// POSIX seconds of the request's time, and the recency decay per second.
    pub now: f64,
    pub decay: f64,
    pub recency_weight: f64,
    pub max_candidates: usize,
}

/// A ranked chunk: its id, final score, token counts (cited form, joined) and the chunk before it
/// in its Record's text (packing joins the two into one passage).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Ranked {
    pub id: i64,
    pub score: f64,
    pub tokens: i64,
    pub joined: i64,
    pub before: Option<i64>,
}

/// The chunks of one Brain's index, as ranking sees them. See the module docs.
#[derive(Default)]
pub struct ChunkTable {
    inner: Shared<Inner>,
}

impl ChunkTable {
    /// An empty table.
    pub fn new() -> Self {
        Self::default()
    }

    /// Adds chunks, each in its source's list at its [`Place`]. Each is its own Record's only chunk
    /// until [`ChunkTable::link`] says otherwise.
    ///
    /// # Errors
    /// [`CoreError::InvalidArgument`] when an id is present already or repeated; nothing is added.
    pub fn add(&self, chunks: Vec<NewChunk>) -> Result<(), CoreError> {
        let mut inner = self.inner.write();
        let mut ids = HashSet::with_capacity(chunks.len());
        if chunks
            .iter()
            .any(|c| !ids.insert(c.id) || inner.entries.contains_key(&c.id))
        {
            return Err(CoreError::InvalidArgument {
                name: "chunks",
                reason: "an id is present already or repeated",
            });
        }
        inner.entries.reserve(chunks.len());
        for chunk in chunks {
            let source = inner.intern(chunk.source);
            let speaker = inner.intern(chunk.speaker);
            let place = Place {
                ts: chunk.ts,
                id: chunk.id,
            };
            let Inner { entries, order, .. } = &mut *inner;
            let list = order.entry(source.clone()).or_default();
            list.insert(place);
            let previous = list.range(..place).next_back().map(|p| p.id);
            let following = list
                .range((Bound::Excluded(place), Bound::Unbounded))
                .next()
                .map(|p| p.id);
            if let Some(entry) = previous.and_then(|p| entries.get_mut(&p)) {
                entry.following = Some(chunk.id);
            }
            if let Some(entry) = following.and_then(|f| entries.get_mut(&f)) {
                entry.previous = Some(chunk.id);
            }
            entries.insert(
                chunk.id,
                Entry {
                    ts: chunk.ts,
                    source,
                    speaker,
                    trust: chunk.trust,
                    tokens: chunk.tokens,
                    joined: chunk.joined,
                    line: chunk.line,
                    before: None,
                    record: (chunk.id, chunk.id),
                    previous,
                    following,
                },
            );
        }
        Ok(())
    }

    /// Links one Record's chunks, given in text order: each points at the one before it, and all at
    /// the Record's first and last chunk (the lowest and highest id). Unknown ids are skipped.
    pub fn link(&self, ordered: &[i64]) {
        let (Some(&first), Some(&last)) = (ordered.iter().min(), ordered.iter().max()) else {
            return;
        };
        let mut inner = self.inner.write();
        let mut before = None;
        for &id in ordered {
            if let Some(entry) = inner.entries.get_mut(&id) {
                entry.before = before;
                entry.record = (first, last);
            }
            before = Some(id);
        }
    }

    /// Removes chunks; unknown ids are ignored.
    pub fn remove(&self, ids: &[i64]) {
        let mut inner = self.inner.write();
        for id in ids {
            let Some(entry) = inner.entries.remove(id) else {
                continue;
            };
            if let Some(p) = entry.previous.and_then(|p| inner.entries.get_mut(&p)) {
                p.following = entry.following;
            }
            if let Some(f) = entry.following.and_then(|f| inner.entries.get_mut(&f)) {
                f.previous = entry.previous;
            }
            if let Some(list) = inner.order.get_mut(&entry.source) {
                list.remove(&Place {
                    ts: entry.ts,
                    id: *id,
                });
                if list.is_empty() {
                    inner.order.remove(&entry.source);
                }
            }
            inner.release(entry.source);
            inner.release(entry.speaker);
        }
    }

    /// The chunk of the same source right before `id` (see [`Place`]), if any.
    pub fn previous(&self, id: i64) -> Option<i64> {
        self.inner.read().entries.get(&id)?.previous
    }

    /// The [`NewChunk::line`] count of each of `ids`, `None` for one not in the table.
    pub fn line_tokens(&self, ids: &[i64]) -> Vec<Option<i64>> {
        let inner = self.inner.read();
        ids.iter()
            .map(|id| inner.entries.get(id).map(|e| e.line))
            .collect()
    }

    /// `(tokens, joined)` of `id`, or `None` when it is not in the table.
    pub fn token_counts(&self, id: i64) -> Option<(i64, i64)> {
        self.inner
            .read()
            .entries
            .get(&id)
            .map(|e| (e.tokens, e.joined))
    }

    /// For each of `ids`, the first chunk of the turn packing counts it in (see [`timed_turn`]);
    /// Records further apart than `gap` seconds are not one turn. An id not in the table is its own.
    pub fn turns(&self, ids: &[i64], gap: f64) -> Vec<i64> {
        let inner = self.inner.read();
        ids.iter()
            .map(|&id| timed_turn(&inner.entries, id, gap))
            .collect()
    }

    /// The number of chunks.
    pub fn len(&self) -> usize {
        self.inner.read().entries.len()
    }

    /// Whether the table is empty.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The distinct source and speaker names the table holds.
    pub fn names(&self) -> usize {
        self.inner.read().names.len()
    }

    /// Scores the fused candidates and the neighbouring turns they spread score to; the best
    /// `max_candidates`, best first (ties by id). Fused ids not in the table (removed since the
    /// lanes ran) are left out.
    pub fn rank(&self, request: &RankRequest<'_>) -> Vec<Ranked> {
        let inner = self.inner.read();
        let entries = &inner.entries;
        let vector: FxHashMap<i64, f64> = request.vector.iter().copied().collect();
        let lexical: FxHashMap<i64, f64> = request.lexical.iter().copied().collect();

        // The score pass: fusion plus score-aware terms, speaker and time boosts.
        let mut ids: Vec<i64> = Vec::with_capacity(request.fused.len());
        let mut base: Vec<f64> = Vec::with_capacity(request.fused.len());
        for &(id, fused) in request.fused {
            let Some(entry) = entries.get(&id) else {
                continue;
            };
            let v = vector.get(&id).copied().unwrap_or(0.0);
            let vector_term = if v > 0.0 {
                request.vector_weight * v
            } else {
                0.0
            };
            let mut s = fused
                + (vector_term + request.lexical_weight * lexical.get(&id).copied().unwrap_or(0.0));
            if let (false, Some(speaker)) = (request.named.is_empty(), entry.speaker.as_deref()) {
                if request.named.contains(speaker) {
                    s *= request.speaker_boost;
                } else if !request.kin.contains(speaker) {
                    s *= request.stranger_factor;
                }
            }
            if request
                .focus
                .iter()
                .any(|&(start, end)| start <= entry.ts && entry.ts < end)
            {
                s *= request.time_boost;
            }
            ids.push(id);
            base.push(s);
        }

        if request.neighbor_weights.iter().any(|&w| w != 0.0) && !ids.is_empty() {
            spread(entries, request, &mut ids, &mut base);
        }

        // Final scores: recency and trust.
        let mut ranked: Vec<Ranked> = ids
            .iter()
            .zip(&base)
            .map(|(&id, &b)| {
                let e = &entries[&id];
                let recency = (-request.decay * (request.now - e.ts).max(0.0)).exp();
                let score = final_score(b, recency, e.trust, request.recency_weight);
                Ranked {
                    id,
                    score,
                    tokens: e.tokens,
                    joined: e.joined,
                    before: e.before,
                }
            })
            .collect();
        ranked.sort_unstable_by(|a, b| cmp_desc(a.score, b.score).then(a.id.cmp(&b.id)));
        ranked.truncate(request.max_candidates);
        ranked
    }
}

/// The most Records a speaker's turn spans: a longer run of one speaker's Records is not a burst of
/// messages within a conversation but a stream with one voice (notes, a log), whose turns stay its
/// Records.
const MAX_TURN_RECORDS: usize = 8;

/// The first and last chunk of the speaker's turn `id` is in: its Record, with the Records of the
/// same speaker and source right before and after it, each within `gap` seconds of the next,
/// when another speaker's Record bounds that run on at least one side. A turn ends where another
/// speaker takes over, so a chat's burst of short messages is one turn, as a long message is, and
/// spreading reaches the other side's replies. A run with no other speaker in reach, or of more than
/// [`MAX_TURN_RECORDS`], is one voice: each of its Records is a turn.
fn turn_span(entries: &FxHashMap<i64, Entry>, id: i64, gap: f64) -> (i64, i64) {
    let Some(entry) = entries.get(&id) else {
        return (id, id);
    };
    if entry.speaker.is_none() {
        return entry.record;
    }
    // From the Record's edge, over the same speaker's Records: the run's edge on that side, the
    // Records passed, and whether another speaker's Record is what ended it.
    let run = |backwards: bool| {
        let edge = |e: &Entry| if backwards { e.record.0 } else { e.record.1 };
        let (mut end, mut passed) = (edge(entry), 0);
        while passed < MAX_TURN_RECORDS {
            let Some(at) = entries.get(&end) else {
                break;
            };
            let next = if backwards { at.previous } else { at.following };
            let Some(other) = next.and_then(|n| entries.get(&n)) else {
                break;
            };
            if other.source != entry.source || (other.ts - at.ts).abs() > gap {
                break;
            }
            if other.speaker != entry.speaker {
                return (end, passed, true);
            }
            end = edge(other);
            passed += 1;
        }
        (end, passed, false)
    };
    let (first, before, answered) = run(true);
    let (last, after, answering) = run(false);
    if (answered || answering) && before + after < MAX_TURN_RECORDS {
        (first, last)
    } else {
        entry.record
    }
}

/// The first chunk of the turn packing counts `id` in: its speaker's turn ([`turn_span`]) when each
/// of the turn's Records was said later than the one before it, else its own Record. Records that
/// share a time (a history that knows only each session's date) are in the order they came, which
/// concurrent clients shuffle: a turn told by that order would join messages of different turns.
fn timed_turn(entries: &FxHashMap<i64, Entry>, id: i64, gap: f64) -> i64 {
    let Some(entry) = entries.get(&id) else {
        return id;
    };
    let (first, last) = turn_span(entries, id, gap);
    let Some(mut here) = entries.get(&first) else {
        return entry.record.0;
    };
    // Record to Record, not chunk to chunk: a message of a megabyte is thousands of chunks.
    for _ in 0..=MAX_TURN_RECORDS {
        if here.record.1 == last {
            return first;
        }
        let Some(next) = entries
            .get(&here.record.1)
            .and_then(|e| e.following)
            .and_then(|n| entries.get(&n))
        else {
            break;
        };
        if next.ts <= here.ts {
            break;
        }
        here = next;
    }
    entry.record.0
}

/// Spreading to the neighbouring turns: the best `neighbor_sources` scored chunks walk from their
/// turn's first chunk backwards and from its last forwards, one turn further each time, until the
/// conversation breaks (another source, or too far apart in time). Of each turn passed, the chunk
/// next to the walk's last step earns the bonus. A chunk not scored yet joins `ids` with what it
/// earned; bonuses are summed in the order they are earned.
fn spread(
    entries: &FxHashMap<i64, Entry>,
    request: &RankRequest<'_>,
    ids: &mut Vec<i64>,
    base: &mut Vec<f64>,
) {
    let mut extra: Vec<(i64, f64)> = Vec::new();
    let mut extra_at: FxHashMap<i64, usize> = FxHashMap::default();
    let sources = ids.len().min(request.neighbor_sources);
    let gap = request.neighbor_gap;
    for (&id, &s) in ids[..sources].iter().zip(base.iter()) {
        let entry = &entries[&id];
        let own = turn_span(entries, id, gap);
        for backwards in [true, false] {
            let factor = if backwards { 1.0 } else { request.next_factor };
            let step = |at: i64| {
                entries
                    .get(&at)
                    .and_then(|e| if backwards { e.previous } else { e.following })
            };
            let mut other_id = step(if backwards { own.0 } else { own.1 });
            for &weight in request.neighbor_weights {
                let Some((oid, o)) = other_id.and_then(|o| entries.get(&o).map(|e| (o, e))) else {
                    break;
                };
                if o.source != entry.source || (o.ts - entry.ts).abs() > gap {
                    break;
                }
                if request.admits.admits(oid, o) {
                    let bonus = weight * factor * s;
                    if let Some(&at) = extra_at.get(&oid) {
                        extra[at].1 += bonus;
                    } else {
                        extra_at.insert(oid, extra.len());
                        extra.push((oid, bonus));
                    }
                }
                let turn = turn_span(entries, oid, gap);
                other_id = step(if backwards { turn.0 } else { turn.1 });
            }
        }
    }
    let position: FxHashMap<i64, usize> = ids.iter().enumerate().map(|(i, &id)| (id, i)).collect();
    for (oid, bonus) in extra {
        if let Some(&i) = position.get(&oid) {
            base[i] += bonus;
        } else {
            ids.push(oid);
            base.push(bonus);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn chunk(id: i64, ts: f64, source: &str, speaker: &str) -> NewChunk {
        NewChunk {
            id,
            ts,
            source: Some(source.to_owned()),
            speaker: Some(speaker.to_owned()),
            trust: 1.0,
            tokens: 10,
            joined: 8,
            line: 6,
        }
    }

    fn request<'a>(
        fused: &'a [(i64, f64)],
        named: &'a HashSet<String>,
        excluded: &'a HashSet<i64>,
    ) -> RankRequest<'a> {
        RankRequest {
            fused,
            vector: &[],
            lexical: &[],
            vector_weight: 0.0,
            lexical_weight: 0.0,
            named,
            speaker_boost: 1.5,
            kin: named,
            stranger_factor: 1.0,
            focus: &[],
            time_boost: 2.0,
            neighbor_weights: &[],
            neighbor_gap: 3600.0,
            next_factor: 1.0,
            neighbor_sources: 30,
            admits: Admits::all(excluded),
            now: 0.0,
            decay: 0.0,
            recency_weight: 0.0,
            max_candidates: 150,
        }
    }

    #[test]
    fn add_refuses_present_and_repeated_ids() {
        let table = ChunkTable::new();
        table.add(vec![chunk(1, 0.0, "s", "a")]).unwrap();
        assert!(table.add(vec![chunk(1, 0.0, "s", "a")]).is_err());
        assert!(table
            .add(vec![chunk(2, 0.0, "s", "a"), chunk(2, 0.0, "s", "a")])
            .is_err());
        assert_eq!(table.len(), 1);
    }

    #[test]
    fn remove_splices_the_added_order_and_drops_unused_names() {
        let table = ChunkTable::new();
        table
            .add(vec![
                chunk(1, 0.0, "s", "ann"),
                chunk(2, 0.0, "t", "bob"),
                chunk(3, 0.0, "s", "ann"),
            ])
            .unwrap();
        assert_eq!(table.names(), 4);
        table.remove(&[2, 99]);
        assert_eq!(table.previous(3), Some(1));
        assert_eq!(table.names(), 2); // "t" and "bob" went with their only chunk
        table.remove(&[3]);
        table.add(vec![chunk(4, 0.0, "s", "ann")]).unwrap();
        assert_eq!(table.previous(4), Some(1)); // 1 is the newest again after 3 went
        table.remove(&[1, 4]);
        assert_eq!((table.len(), table.names()), (0, 0));
    }

    #[test]
    fn a_conversation_s_neighbours_are_its_own_records_whatever_arrives_between() {
        let table = ChunkTable::new();
        table
            .add(vec![
                chunk(1, 0.0, "chat", "a"),
                chunk(2, 0.0, "feed", "x"),
                chunk(3, 0.0, "chat", "b"),
                chunk(4, 0.0, "feed", "x"),
                chunk(5, 0.0, "chat", "a"),
                chunk(6, 0.0, "feed", "x"),
                chunk(7, 0.0, "chat", "b"),
            ])
            .unwrap();
        assert_eq!((table.previous(5), table.previous(4)), (Some(3), Some(2)));
        // 1 and 5 are one turn away, 7 two; no chunk of the feed is a neighbour
        assert_eq!(
            spread_from(&table, 3),
            vec![(3, 1.0), (1, 0.5), (5, 0.5), (7, 0.25)]
        );
        // the chat's newest chunk goes: the next one follows 5, not the feed's 6
        table.remove(&[7]);
        table.add(vec![chunk(8, 0.0, "chat", "b")]).unwrap();
        assert_eq!(table.previous(8), Some(5));
        // a source's last chunk gone, its list starts afresh
        table.remove(&[2, 4, 6]);
        table.add(vec![chunk(9, 0.0, "feed", "x")]).unwrap();
        assert_eq!(table.previous(9), None);
    }

    #[test]
    fn a_conversation_posted_out_of_order_is_ordered_by_time_then_arrival() {
        let table = ChunkTable::new();
        // as clients posting at once deliver it: 30 s, 10 s, 20 s; then two turns of one time
        table
            .add(vec![
                chunk(1, 30.0, "chat", "b"),
                chunk(2, 10.0, "chat", "b"),
                chunk(3, 20.0, "chat", "a"),
                chunk(4, 40.0, "chat", "a"),
                chunk(5, 40.0, "chat", "b"),
            ])
            .unwrap();
        let previous: Vec<Option<i64>> = (1..=5).map(|id| table.previous(id)).collect();
        assert_eq!(previous, vec![Some(3), None, Some(2), Some(1), Some(4)]);
        // the turns said right before and after 3, then the one after that
        assert_eq!(
            spread_from(&table, 3),
            vec![(3, 1.0), (1, 0.5), (2, 0.5), (4, 0.25)]
        );
        table.remove(&[3]);
        table.add(vec![chunk(6, 15.0, "chat", "b")]).unwrap();
        assert_eq!((table.previous(6), table.previous(1)), (Some(2), Some(6)));
    }

    #[test]
    fn link_sets_before_and_the_turn() {
        let table = ChunkTable::new();
        table
            .add(vec![
                chunk(5, 0.0, "s", "a"),
                chunk(6, 0.0, "s", "a"),
                chunk(7, 0.0, "s", "a"),
            ])
            .unwrap();
        table.link(&[6, 5, 7]);
        let fused = [(5, 1.0), (6, 1.0), (7, 1.0)];
        let (named, none) = (HashSet::new(), HashSet::new());
        let before: Vec<(i64, Option<i64>)> = table
            .rank(&request(&fused, &named, &none))
            .iter()
            .map(|r| (r.id, r.before))
            .collect();
        assert_eq!(before, vec![(5, Some(6)), (6, None), (7, Some(5))]);
        assert_eq!(table.token_counts(7), Some((10, 8)));
        assert_eq!(table.token_counts(8), None);
        assert_eq!(table.line_tokens(&[7, 8, 5]), vec![Some(6), None, Some(6)]);
    }

    #[test]
    fn spreading_stops_at_another_source_and_respects_admits() {
        let table = ChunkTable::new();
        table
            .add(vec![
                chunk(1, 0.0, "other", "a"),
                chunk(2, 0.0, "s", "a"),
                chunk(3, 0.0, "s", "b"),
                chunk(4, 0.0, "s", "a"),
                chunk(5, 99_999.0, "s", "a"),
            ])
            .unwrap();
        let (named, none) = (HashSet::new(), HashSet::new());
        let fused = [(3, 1.0)];
        let mut req = request(&fused, &named, &none);
        req.neighbor_weights = &[0.5, 0.25];
        let ranked = table.rank(&req);
        let got: Vec<(i64, f64)> = ranked.iter().map(|r| (r.id, r.score)).collect();
        // 2 and 4 are one turn away; 1 is another source, 5 too far in time.
        assert_eq!(got, vec![(3, 1.0), (2, 0.5), (4, 0.5)]);
        let except: HashSet<i64> = [4].into();
        req.admits.excluded = &except;
        assert_eq!(
            table.rank(&req).iter().map(|r| r.id).collect::<Vec<_>>(),
            vec![3, 2]
        );
        // A filter admits by the table's facts; the fused chunk came from the lanes and stays.
        let other: HashSet<String> = ["other".to_owned()].into();
        req.admits = Admits {
            sources: Some(&other),
            ..Admits::all(&none)
        };
        assert_eq!(
            table.rank(&req).iter().map(|r| r.id).collect::<Vec<_>>(),
            vec![3]
        );
        req.admits = Admits {
            since: Some(1.0),
            ..Admits::all(&none)
        };
        assert_eq!(
            table.rank(&req).iter().map(|r| r.id).collect::<Vec<_>>(),
            vec![3]
        );
        req.admits = Admits {
            until: Some(0.0),
            ..Admits::all(&none)
        };
        assert_eq!(table.rank(&req).len(), 3);
    }

    #[test]
    fn boosts_and_removed_candidates() {
        let table = ChunkTable::new();
        table
            .add(vec![chunk(1, 10.0, "s", "ann"), chunk(2, 20.0, "s", "bob")])
            .unwrap();
        let named: HashSet<String> = ["ann".to_owned()].into();
        let none = HashSet::new();
        let fused = [(2, 1.0), (1, 0.8), (9, 5.0)];
        let mut req = request(&fused, &named, &none);
        req.focus = &[(15.0, 25.0)];
        let got: Vec<(i64, f64)> = table.rank(&req).iter().map(|r| (r.id, r.score)).collect();
        assert_eq!(got, vec![(2, 2.0), (1, 0.8 * 1.5)]);
    }

    #[test]
    fn strangers_to_the_named_speakers_are_lowered_and_nobody_else() {
        let table = ChunkTable::new();
        let mut unnamed = chunk(4, 10.0, "s", "x");
        unnamed.speaker = None;
        table
            .add(vec![
                chunk(1, 10.0, "s", "ann"),
                chunk(2, 10.0, "s", "bob"),
                chunk(3, 10.0, "s", "eve"),
                unnamed,
            ])
            .unwrap();
        let (named, kin, none): (HashSet<String>, HashSet<String>, _) = (
            ["ann".to_owned()].into(),
            ["bob".to_owned()].into(),
            HashSet::new(),
        );
        let fused = [(1, 1.0), (2, 1.0), (3, 1.0), (4, 1.0)];
        let mut req = request(&fused, &named, &none);
        req.kin = &kin;
        req.stranger_factor = 0.5;
        let score = |req: &RankRequest<'_>| -> Vec<(i64, f64)> {
            let mut got: Vec<(i64, f64)> =
                table.rank(req).iter().map(|r| (r.id, r.score)).collect();
            got.sort_by_key(|&(id, _)| id);
            got
        };
        // ann is named, bob talks with her, eve is a stranger; a chunk of no speaker is nobody's
        assert_eq!(score(&req), vec![(1, 1.5), (2, 1.0), (3, 0.5), (4, 1.0)]);
        // a query that names nobody lowers nobody
        let nobody = HashSet::new();
        req.named = &nobody;
        assert_eq!(score(&req), vec![(1, 1.0), (2, 1.0), (3, 1.0), (4, 1.0)]);
    }

    fn spread_from(table: &ChunkTable, source: i64) -> Vec<(i64, f64)> {
        let (named, none) = (HashSet::new(), HashSet::new());
        let fused = [(source, 1.0)];
        let mut req = request(&fused, &named, &none);
        req.neighbor_weights = &[0.5, 0.25];
        table.rank(&req).iter().map(|r| (r.id, r.score)).collect()
    }

    /// One Record a chunk, said in this order by these speakers ("" for none) at these times (at
    /// 1, 2, 3, ... when `times` is empty).
    fn conversation(speakers: &[&str], times: &[f64]) -> ChunkTable {
        let table = ChunkTable::new();
        let mut chunks = Vec::new();
        for (n, (id, speaker)) in (1..).zip(speakers).enumerate() {
            let mut c = chunk(id, times.get(n).copied().unwrap_or(id as f64), "s", speaker);
            if speaker.is_empty() {
                c.speaker = None;
            }
            chunks.push(c);
        }
        table.add(chunks).unwrap();
        table
    }

    #[test]
    fn a_burst_of_one_speakers_records_is_one_turn() {
        let table = conversation(&["ann", "bob", "bob", "bob", "ann", "ann", "bob"], &[]);
        // 5 and 6 are one turn of ann's: the walk passes over 4's burst (2-4) to reach 1, and
        // forwards over 6 to bob's 7.
        assert_eq!(
            spread_from(&table, 5),
            vec![(5, 1.0), (4, 0.5), (7, 0.5), (1, 0.25)]
        );
        // Too far apart in time, two Records of one speaker are two turns.
        let table = conversation(&["ann", "bob", "bob"], &[0.0, 1.0, 10_000.0]);
        assert_eq!(spread_from(&table, 1), vec![(1, 1.0), (2, 0.5)]);
    }

    #[test]
    fn a_chunk_s_turn_is_its_speaker_s_run_where_the_records_times_order_it() {
        let turns = |table: &ChunkTable| -> Vec<(i64, i64)> {
            let (named, none) = (HashSet::new(), HashSet::new());
            let fused: Vec<(i64, f64)> = (1..=7).map(|id| (id, 1.0)).collect();
            let ids: Vec<i64> = table
                .rank(&request(&fused, &named, &none))
                .iter()
                .map(|r| r.id)
                .collect();
            let mut got: Vec<(i64, i64)> =
                ids.iter().copied().zip(table.turns(&ids, 3600.0)).collect();
            got.sort_unstable();
            got
        };
        let speakers = ["ann", "bob", "bob", "bob", "ann", "", ""];
        // bob's burst (2-4) is one turn; a Record with no speaker is a turn of its own
        assert_eq!(
            turns(&conversation(&speakers, &[])),
            vec![(1, 1), (2, 2), (3, 2), (4, 2), (5, 5), (6, 6), (7, 7)]
        );
        // said at one time, the burst's order is only the order it came in: each Record is its own
        assert_eq!(
            turns(&conversation(
                &speakers,
                &[1.0, 2.0, 2.0, 2.0, 3.0, 4.0, 5.0]
            )),
            vec![(1, 1), (2, 2), (3, 3), (4, 4), (5, 5), (6, 6), (7, 7)]
        );
    }

    #[test]
    fn one_voice_and_unnamed_speakers_keep_their_records_as_turns() {
        // Past MAX_TURN_RECORDS Records of one speaker, a stream of notes spreads to the Records
        // next to it, not to the end of the stream.
        let table = conversation(&["ann"; 20], &[]);
        assert_eq!(
            spread_from(&table, 10),
            vec![(10, 1.0), (9, 0.5), (11, 0.5), (8, 0.25), (12, 0.25)]
        );
        // A run of MAX_TURN_RECORDS Records that another speaker's Record (1) comes before is still
        // one turn: the walk back from its last Record reaches 1 first. One more Record and it is
        // one voice: the walk earns the Record right before.
        for (run, first_earner) in [(MAX_TURN_RECORDS, 1), (MAX_TURN_RECORDS + 1, 9)] {
            let speakers: Vec<&str> = (0..=run)
                .map(|i| if i == 0 { "bob" } else { "ann" })
                .collect();
            let last = i64::try_from(run).unwrap() + 1;
            assert_eq!(
                spread_from(&conversation(&speakers, &[]), last)[1],
                (first_earner, 0.5)
            );
        }
        // So is a short one: no other speaker bounds it.
        assert_eq!(
            spread_from(&conversation(&["ann"; 5], &[]), 3),
            vec![(3, 1.0), (2, 0.5), (4, 0.5), (1, 0.25), (5, 0.25)]
        );
        assert_eq!(
            spread_from(&conversation(&["", "", "", "bob"], &[]), 2),
            vec![(2, 1.0), (1, 0.5), (3, 0.5), (4, 0.25)]
        );
    }
}
