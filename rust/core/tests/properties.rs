//! Property tests of the core's invariants. Case counts stay modest so `cargo test --release`
//! runs in seconds on a small machine.

use brainstore_core::lexical::{analyze, near_duplicates, LexicalIndex};
use brainstore_core::pack::{pack, pack_grouped, Groups, Runs};
use brainstore_core::pattern::Pattern;
use brainstore_core::rank::{Admits, ChunkTable, NewChunk, RankRequest};
use brainstore_core::score::{cmp_desc, rrf_fuse};
use brainstore_core::{tokens, watermark};
use proptest::prelude::*;
use std::collections::{BTreeMap, BTreeSet, HashSet};

fn config(cases: u32) -> ProptestConfig {
    ProptestConfig {
        cases,
        ..ProptestConfig::default()
    }
}

fn score() -> impl Strategy<Value = f64> {
    prop_oneof![
        8 => -1.0e6..1.0e6_f64,
        1 => Just(f64::NAN),
        1 => Just(0.5),
    ]
}

proptest! {
    #![proptest_config(config(256))]

    #[test]
    fn pack_with_runs_charges_within_budget(
        items in prop::collection::vec((1..80_i64, 0..100_u8, score(), any::<bool>()), 0..60),
        budget in 1..1_500_i64,
    ) {
        // Items chain into runs where the flag is set (item i follows item i - 1).
        let counts: Vec<i64> = items.iter().map(|t| t.0).collect();
        let joined: Vec<i64> = items.iter().map(|t| t.0 * i64::from(t.1) / 100).collect();
        let scores: Vec<f64> = items.iter().map(|t| t.2).collect();
        let prev: Vec<i64> = items.iter().enumerate()
            .map(|(i, t)| if t.3 && i > 0 { i64::try_from(i).unwrap() - 1 } else { -1 }).collect();
        let runs = Runs { prev: &prev, joined: &joined };
        let chosen = pack(&counts, &scores, budget, Some(runs)).unwrap();
        // Replay the charges in the order chosen: joined only next to an earlier chosen neighbour.
        let mut picked = vec![false; counts.len()];
        let mut used = 0_i64;
        for &i in &chosen {
            let before = usize::try_from(prev[i]).is_ok_and(|p| picked[p]);
            let after = i + 1 < counts.len() && prev[i + 1] == i64::try_from(i).unwrap() && picked[i + 1];
            used += if before || after { joined[i] } else { counts[i] };
            picked[i] = true;
        }
        prop_assert!(used <= budget);
        // Runs whose joined count is the full count change nothing.
        let flat = Runs { prev: &prev, joined: &counts };
        prop_assert_eq!(pack(&counts, &scores, budget, Some(flat)).unwrap(),
                        pack(&counts, &scores, budget, None).unwrap());
    }

    #[test]
    fn pack_with_groupings_charges_each_header_once_within_budget(
        items in prop::collection::vec((1..80_i64, -1..4_i64, -1..3_i64, score()), 0..60),
        day_costs in prop::collection::vec(0..40_i64, 4),
        speaker_costs in prop::collection::vec(0..10_i64, 3),
        budget in 1..1_500_i64,
    ) {
        let counts: Vec<i64> = items.iter().map(|t| t.0).collect();
        let day: Vec<i64> = items.iter().map(|t| t.1).collect();
        let speaker: Vec<i64> = items.iter().map(|t| t.2).collect();
        let scores: Vec<f64> = items.iter().map(|t| t.3).collect();
        let groupings = [Groups { of: &day, cost: &day_costs }, Groups { of: &speaker, cost: &speaker_costs }];
        let chosen = pack_grouped(&counts, &scores, budget, None, &groupings).unwrap();
        // What the chosen items render to: each its count, each group's header once per grouping.
        let mut headers = BTreeSet::new();
        let mut used: i64 = chosen.iter().map(|&i| counts[i]).sum();
        for &i in &chosen {
            for (k, grouping) in groupings.iter().enumerate() {
                if grouping.of[i] >= 0 && headers.insert((k, grouping.of[i])) {
                    used += grouping.cost[usize::try_from(grouping.of[i]).unwrap()];
                }
            }
        }
        prop_assert!(used <= budget);
        // Free headers change nothing, and neither does a grouping of no item.
        let free = vec![0_i64; day_costs.len()];
        prop_assert_eq!(pack_grouped(&counts, &scores, budget, None, &[Groups { of: &day, cost: &free }]).unwrap(),
                        pack(&counts, &scores, budget, None).unwrap());
        let none = vec![-1_i64; counts.len()];
        prop_assert_eq!(pack_grouped(&counts, &scores, budget, None, &[groupings[0], Groups { of: &none, cost: &[] }]).unwrap(),
                        pack_grouped(&counts, &scores, budget, None, &groupings[..1]).unwrap());
    }

    #[test]
    fn pack_never_exceeds_budget_and_is_deterministic(
        items in prop::collection::vec((0..500_i64, score()), 0..60),
        budget in -10..3_000_i64,
    ) {
        let (counts, scores): (Vec<i64>, Vec<f64>) = items.into_iter().unzip();
        let chosen = pack(&counts, &scores, budget, None).unwrap();
        let used: i64 = chosen.iter().map(|&i| counts[i]).sum();
        prop_assert!(used <= budget.max(0));
        prop_assert_eq!(&chosen, &pack(&counts, &scores, budget, None).unwrap());
        let mut unique = chosen.clone();
        unique.sort_unstable();
        unique.dedup();
        prop_assert_eq!(unique.len(), chosen.len());
        // Greedy: every skipped item would have overflowed when its turn came.
        if budget > 0 {
            prop_assert!(chosen.len() == counts.len() || counts.iter().enumerate()
                .filter(|(i, _)| !chosen.contains(i))
                .all(|(_, &c)| used + c > budget));
        }
    }

    #[test]
    fn watermark_round_trip(secret in prop::collection::vec(any::<u8>(), 1..64),
                            key in ".{0,40}", seq in any::<u64>()) {
        let token = watermark::encode(&secret, &key, seq).unwrap();
        prop_assert_eq!(watermark::decode(&secret, &key, &token), Some(seq));
    }

    #[test]
    fn watermark_any_tampered_char_is_rejected(seq in any::<u64>(), pos in 0..42_usize,
                                               replacement in prop_oneof![
        any::<char>(),
        prop::sample::select(
            "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_".chars().collect::<Vec<_>>()),
    ]) {
        let token = watermark::encode(b"secret", "brain", seq).unwrap();
        let mut chars: Vec<char> = token.chars().collect();
        prop_assume!(chars[pos] != replacement);
        chars[pos] = replacement;
        let tampered: String = chars.into_iter().collect();
        prop_assert_eq!(watermark::decode(b"secret", "brain", &tampered), None);
    }

    #[test]
    fn watermark_decode_never_panics(s in ".*", bytes in prop::collection::vec(any::<u8>(), 0..40)) {
        prop_assert_eq!(watermark::decode(b"secret", "brain", &s), None);
        let lossy = format!("wm_{}", String::from_utf8_lossy(&bytes));
        let _ = watermark::decode(b"secret", "brain", &lossy);
        let _ = watermark::decode(&bytes, &s, &lossy);
    }

    #[test]
    fn rrf_returns_each_id_once_sorted(lanes in prop::collection::vec(
        prop::collection::vec(0..30_i64, 0..20), 0..4)) {
        let weights = vec![1.0; lanes.len()];
        let fused = rrf_fuse(&lanes, &weights, 60.0).unwrap();
        let mut ids: Vec<i64> = fused.iter().map(|p| p.0).collect();
        prop_assert!(fused.windows(2).all(|w| cmp_desc(w[0].1, w[1].1).then(w[0].0.cmp(&w[1].0)).is_lt()));
        ids.sort_unstable();
        let mut expected: Vec<i64> = lanes.concat();
        expected.sort_unstable();
        expected.dedup();
        prop_assert_eq!(ids, expected);
    }
}

proptest! {
    #![proptest_config(config(64))]

    #[test]
    fn truncate_is_a_fitting_prefix(text in "\\PC{0,200}", max in 0..60_usize) {
        let cut = tokens::truncate(&text, max);
        prop_assert!(text.starts_with(cut));
        prop_assert!(tokens::count(cut) <= max);
        if tokens::count(&text) <= max {
            prop_assert_eq!(cut, text.as_str());
        }
    }

    #[test]
    fn lexical_finds_unique_word_first(docs in prop::collection::vec("[a-z ]{0,40}", 1..20),
                                       target in 0..20_usize) {
        let target = target % docs.len();
        let idx = LexicalIndex::new();
        let mut texts = docs.clone();
        texts[target].push_str(" zyxwvut");
        let ids: Vec<i64> = (0_i64..).take(texts.len()).collect();
        let target_id = ids[target];
        idx.add(&ids, &texts).unwrap();
        let hits = idx.search("zyxwvut", 5, None, &[]);
        prop_assert_eq!(hits.first().map(|h| h.0), Some(target_id));
        idx.remove(&[target_id]);
        prop_assert!(idx.search("zyxwvut", 5, None, &[]).is_empty());
        prop_assert_eq!(idx.len(), texts.len() - 1);
    }

    #[test]
    fn lexical_after_removals_holds_and_answers_what_an_index_of_the_rest_would(
        ops in prop::collection::vec((0_i64..8, prop::option::of("[a-f]{1,3}( [a-f]{1,3}){0,5}")), 1..40),
        queries in prop::collection::vec("[a-f]{1,3}( [a-f]{1,3}){0,2}", 1..5),
    ) {
        // Some(text): add (or replace) the doc; None: remove it.
        let idx = LexicalIndex::new();
        let mut live: BTreeMap<i64, String> = BTreeMap::new();
        for (id, text) in &ops {
            if let Some(text) = text {
                idx.add(&[*id], &[text]).unwrap();
                live.insert(*id, text.clone());
            } else {
                idx.remove(&[*id]);
                live.remove(id);
            }
        }
        let rest = LexicalIndex::new();
        let ids: Vec<i64> = live.keys().copied().collect();
        let texts: Vec<&String> = live.values().collect();
        rest.add(&ids, &texts).unwrap();
        let held: HashSet<String> = texts.iter().flat_map(|t| analyze(t)).collect();
        prop_assert_eq!(idx.term_count(), held.len());
        prop_assert_eq!(idx.len(), live.len());
        for query in &queries {
            let by_id = |hits: Vec<(i64, f64)>| hits.into_iter().collect::<BTreeMap<i64, f64>>();
            let (got, want) = (by_id(idx.search(query, 100, None, &[])), by_id(rest.search(query, 100, None, &[])));
            prop_assert_eq!(got.keys().collect::<Vec<_>>(), want.keys().collect::<Vec<_>>());
            for (id, score) in &got {
                prop_assert!((score - want[id]).abs() < 1e-9);
            }
        }
    }

    #[test]
    fn lexical_exclusion_is_the_complement_filter(docs in prop::collection::vec("[a-e]{1,3}( [a-e]{1,3}){0,6}", 1..30),
                                                  hidden in prop::collection::vec(any::<bool>(), 30),
                                                  query in "[a-e]{1,3}( [a-e]{1,3}){0,2}") {
        let idx = LexicalIndex::new();
        let ids: Vec<i64> = (0_i64..).take(docs.len()).collect();
        idx.add(&ids, &docs).unwrap();
        let excluded: Vec<i64> = ids.iter().copied().filter(|&i| hidden[i as usize]).collect();
        let allowed: Vec<i64> = ids.iter().copied().filter(|&i| !hidden[i as usize]).collect();
        let by_exclusion = idx.search(&query, 10, None, &excluded);
        prop_assert!(by_exclusion.iter().all(|h| !excluded.contains(&h.0)));
        prop_assert_eq!(by_exclusion, idx.search(&query, 10, Some(&allowed), &[]));
    }

    #[test]
    fn near_duplicates_is_jaccard_of_lowercased_word_shingles(
        texts in prop::collection::vec("([A-Ca-cÉéßΣσ]{1,2}[ ,.!]{1,2}){0,7}", 1..12),
        threshold in prop_oneof![Just(0.0), Just(0.5), Just(0.9), Just(1.0), 0.0..=1.0_f64],
    ) {
        // upper-cased copies too, so that near and exact repeats across case occur
        let mut all = texts.clone();
        all.extend(texts.iter().map(|t| t.to_uppercase()));
        prop_assert_eq!(near_duplicates(&all, threshold).unwrap(), reference_near_duplicates(&all, threshold));
    }

    #[test]
    fn near_duplicates_flags_exact_repeats(texts in prop::collection::vec("[a-z]{1,6}( [a-z]{1,6}){0,8}", 1..10)) {
        let mut doubled = texts.clone();
        doubled.extend(texts.iter().cloned());
        let dups = near_duplicates(&doubled, 0.9).unwrap();
        for i in texts.len()..doubled.len() {
            prop_assert!(dups.contains(&i));
        }
        prop_assert!(dups.iter().all(|&i| i > 0));
    }
}

/// The definition of `near_duplicates`: the words of a text lowercased, its set of word 3-shingles
/// (of its words when it has fewer than 3), and a text is a near duplicate of any earlier one whose
/// set has a Jaccard similarity of at least `threshold` with its own (two empty sets: 1.0).
fn reference_near_duplicates(texts: &[String], threshold: f64) -> Vec<usize> {
    let sets: Vec<HashSet<Vec<String>>> = texts
        .iter()
        .map(|text| {
            let words: Vec<String> = text
                .split(|c: char| !c.is_alphanumeric())
                .filter(|w| !w.is_empty())
                .map(str::to_lowercase)
                .collect();
            let size = if words.len() < 3 { 1 } else { 3 };
            words.windows(size).map(<[String]>::to_vec).collect()
        })
        .collect();
    (0..texts.len())
        .filter(|&i| {
            (0..i).any(|k| {
                let (a, b) = (&sets[i], &sets[k]);
                let similarity = if a.is_empty() && b.is_empty() {
                    1.0
                } else {
                    let common = a.intersection(b).count();
                    common as f64 / (a.len() + b.len() - common) as f64
                };
                similarity >= threshold
            })
        })
        .collect()
}

/// A regular expression over a small alphabet, rendered in ECMA-262 syntax and matched by a
/// reference that computes the set of end positions directly from the definition.
#[derive(Debug, Clone)]
enum Re {
    Char(char),
    Any,
    Class(Vec<char>, bool),
    Start,
    End,
    Concat(Vec<Re>),
    Alt(Box<Re>, Box<Re>),
    Star(Box<Re>),
    Plus(Box<Re>),
    Opt(Box<Re>),
}

impl Re {
    fn render(&self) -> String {
        match self {
            Re::Char(c) => c.to_string(),
            Re::Any => ".".to_owned(),
            Re::Class(chars, negated) => {
                format!(
                    "[{}{}]",
                    if *negated { "^" } else { "" },
                    chars.iter().collect::<String>()
                )
            }
            Re::Start => "^".to_owned(),
            Re::End => "$".to_owned(),
            Re::Concat(parts) => parts.iter().fold(String::new(), |mut out, p| {
                out.push_str("(?:");
                out.push_str(&p.render());
                out.push(')');
                out
            }),
            Re::Alt(a, b) => format!("(?:{})|(?:{})", a.render(), b.render()),
            Re::Star(inner) => format!("(?:{})*", inner.render()),
            Re::Plus(inner) => format!("(?:{})+", inner.render()),
            Re::Opt(inner) => format!("(?:{})?", inner.render()),
        }
    }

    /// Every position reachable after matching `self` from any position in `from`.
    fn ends(&self, text: &[char], from: &BTreeSet<usize>) -> BTreeSet<usize> {
        let step = |ok: &dyn Fn(char) -> bool| -> BTreeSet<usize> {
            from.iter()
                .filter(|&&i| i < text.len() && ok(text[i]))
                .map(|&i| i + 1)
                .collect()
        };
        match self {
            Re::Char(c) => step(&|x| x == *c),
            Re::Any => step(&|x| x != '\n'),
            Re::Class(chars, negated) => step(&|x| chars.contains(&x) != *negated),
            Re::Start => from.iter().copied().filter(|&i| i == 0).collect(),
            Re::End => from.iter().copied().filter(|&i| i == text.len()).collect(),
            Re::Concat(parts) => parts.iter().fold(from.clone(), |at, p| p.ends(text, &at)),
            Re::Alt(a, b) => a
                .ends(text, from)
                .union(&b.ends(text, from))
                .copied()
                .collect(),
            Re::Opt(inner) => inner.ends(text, from).union(from).copied().collect(),
            Re::Star(inner) => {
                let mut reached = from.clone();
                let mut frontier = from.clone();
                while !frontier.is_empty() {
                    let next: BTreeSet<usize> = inner
                        .ends(text, &frontier)
                        .difference(&reached)
                        .copied()
                        .collect();
                    reached.extend(next.iter().copied());
                    frontier = next;
                }
                reached
            }
            Re::Plus(inner) => Re::Star(inner.clone()).ends(text, &inner.ends(text, from)),
        }
    }

    /// JSON Schema semantics: the pattern occurs somewhere in the text.
    fn search(&self, text: &str) -> bool {
        let chars: Vec<char> = text.chars().collect();
        let starts: BTreeSet<usize> = (0..=chars.len()).collect();
        !self.ends(&chars, &starts).is_empty()
    }
}

fn regex_ast() -> impl Strategy<Value = Re> {
    let letter = prop::sample::select(vec!['a', 'b']);
    let leaf = prop_oneof![
        4 => letter.prop_map(Re::Char),
        1 => Just(Re::Any),
        1 => (prop::collection::vec(prop::sample::select(vec!['a', 'b', 'c']), 1..3), any::<bool>())
            .prop_map(|(chars, negated)| Re::Class(chars, negated)),
        1 => Just(Re::Start),
        1 => Just(Re::End),
    ];
    leaf.prop_recursive(4, 24, 4, |inner| {
        prop_oneof![
            prop::collection::vec(inner.clone(), 1..4).prop_map(Re::Concat),
            (inner.clone(), inner.clone()).prop_map(|(a, b)| Re::Alt(Box::new(a), Box::new(b))),
            inner.clone().prop_map(|r| Re::Star(Box::new(r))),
            inner.clone().prop_map(|r| Re::Plus(Box::new(r))),
            inner.prop_map(|r| Re::Opt(Box::new(r))),
        ]
    })
}

proptest! {
    #![proptest_config(config(512))]

    #[test]
    fn pattern_agrees_with_the_reference(re in regex_ast(),
                                         texts in prop::collection::vec("[abc\n]{0,8}", 1..6)) {
        let rendered = re.render();
        prop_assume!(rendered.chars().count() <= brainstore_core::pattern::MAX_PATTERN_CHARS);
        let pattern = Pattern::new(&rendered).unwrap();
        let expected: Vec<bool> = texts.iter().map(|t| re.search(t)).collect();
        prop_assert_eq!(pattern.matches(&texts), expected, "pattern {}", rendered);
    }

    #[test]
    fn arbitrary_patterns_never_panic(source in prop_oneof![
        ".{0,300}",
        r"[()\[\]{}*+?|^$\\.,:=!<>0-9a-dpPkuxcbBdDwWsS&~-]{0,64}",
    ], text in ".{0,40}") {
        if let Ok(pattern) = Pattern::new(&source) {
            let _ = pattern.is_match(&text);
            prop_assert_eq!(pattern.matches(&[text.as_str()]), vec![pattern.is_match(&text)]);
        }
    }
}

fn any_float() -> impl Strategy<Value = f64> {
    prop_oneof![
        6 => -1.0e6..1.0e6_f64,
        1 => Just(f64::NAN),
        1 => Just(f64::INFINITY),
        1 => Just(f64::NEG_INFINITY),
    ]
}

proptest! {
    #![proptest_config(config(256))]

    #[test]
    fn ranking_never_panics_and_orders_best_first(
        chunks in prop::collection::vec((0..60_i64, any_float(), 0..3_u8, 0..3_u8), 0..40),
        links in prop::collection::vec(prop::collection::vec(0..60_i64, 0..4), 0..6),
        removed in prop::collection::vec(0..60_i64, 0..6),
        fused in prop::collection::vec((0..70_i64, any_float()), 0..40),
        weights in prop::collection::vec(any_float(), 0..4),
        knobs in prop::collection::vec(any_float(), 9),
        sources in 0..50_usize,
        max_candidates in 0..60_usize,
    ) {
        let table = ChunkTable::new();
        let mut seen = BTreeSet::new();
        let names = [None, Some("a".to_owned()), Some("b".to_owned())];
        let new: Vec<NewChunk> = chunks.iter().filter(|c| seen.insert(c.0)).map(|&(id, ts, source, speaker)| NewChunk {
            id, ts, source: names[usize::from(source)].clone(), speaker: names[usize::from(speaker)].clone(),
            trust: 1.0, tokens: 3, joined: 2, line: 2,
        }).collect();
        table.add(new).unwrap();
        for record in &links {
            table.link(record);
        }
        // Half of these go, the other half stay but are excluded from this request.
        table.remove(&removed[..removed.len() / 2]);
        // Fused ids are unique (rrf_fuse's invariant).
        let mut fused_ids = BTreeSet::new();
        let fused: Vec<(i64, f64)> = fused.into_iter().filter(|f| fused_ids.insert(f.0)).collect();
        let named: HashSet<String> = ["a".to_owned()].into();
        let kin = HashSet::new();
        let excluded: HashSet<i64> = removed.iter().copied().collect();
        let request = RankRequest {
            fused: &fused, vector: &fused, lexical: &fused,
            vector_weight: knobs[0], lexical_weight: knobs[1], named: &named, speaker_boost: knobs[2],
            kin: &kin, stranger_factor: weights.first().copied().unwrap_or(0.4),
            focus: &[(knobs[3], knobs[4])], time_boost: knobs[5], neighbor_weights: &weights,
            neighbor_gap: knobs[6], next_factor: knobs[7], neighbor_sources: sources,
            admits: Admits { since: knobs[3].is_sign_positive().then_some(knobs[4]), ..Admits::all(&excluded) }, now: knobs[8], decay: 1e-7, recency_weight: 0.05, max_candidates,
        };
        let ranked = table.rank(&request);
        prop_assert!(ranked.len() <= max_candidates);
        let ids: BTreeSet<i64> = ranked.iter().map(|r| r.id).collect();
        prop_assert_eq!(ids.len(), ranked.len());
        // Excluded chunks earn nothing from neighbours: only the lanes could have put them here.
        prop_assert!(ranked.iter().all(|r| !excluded.contains(&r.id) || fused_ids.contains(&r.id)));
        for pair in ranked.windows(2) {
            prop_assert!(cmp_desc(pair[0].score, pair[1].score).then(pair[0].id.cmp(&pair[1].id)).is_lt());
        }
    }
}
