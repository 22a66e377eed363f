//! Criterion benches of the kernels, on seeded synthetic data so runs are comparable.
//! Run: `cargo bench -p brainstore-core` (groups: tokens, pack, watermark, lexical, fuse, rank).

use std::collections::HashSet;
use std::hint::black_box;

use brainstore_core::lexical::{near_duplicates, LexicalIndex};
use brainstore_core::pack::pack;
use brainstore_core::rank::{Admits, ChunkTable, NewChunk, RankRequest};
use brainstore_core::score::{final_scores, rrf_fuse};
use brainstore_core::{tokens, watermark};
use criterion::{criterion_group, criterion_main, Criterion};

const WORDS: &[&str] = &[
    "alice", "moved", "to", "paris", "in", "march", "and", "started", "a", "new", "job", "at",
    "the", "museum", "she", "likes", "coffee", "running", "bob", "visited", "berlin", "last",
    "summer", "with", "his", "sister", "they", "talked", "about", "books", "music", "travel",
];

/// A tiny deterministic generator (`SplitMix64`), so benches need no `rand` dependency.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    fn below(&mut self, n: usize) -> usize {
        (self.next() % n as u64) as usize
    }

    fn below_i64(&mut self, n: usize) -> i64 {
        i64::try_from(self.below(n)).unwrap_or_default()
    }

    fn sentence(&mut self, words: usize) -> String {
        (0..words)
            .map(|_| WORDS[self.below(WORDS.len())])
            .collect::<Vec<_>>()
            .join(" ")
    }
}

fn corpus(n: usize, seed: u64) -> Vec<String> {
    let mut rng = Rng(seed);
    (0..n)
        .map(|i| {
            let len = 10 + rng.below(30);
            format!("{} turn{i}", rng.sentence(len))
        })
        .collect()
}

fn bench_tokens(c: &mut Criterion) {
    let turns = corpus(1_000, 1);
    tokens::warm_up();
    let mut g = c.benchmark_group("tokens");
    g.bench_function("count_1k_turns", |b| {
        b.iter(|| tokens::count_many(black_box(&turns)));
    });
    let long = turns.concat();
    g.bench_function("truncate_long_to_500", |b| {
        b.iter(|| tokens::truncate(black_box(&long), 500).len());
    });
    g.finish();
}

fn bench_pack(c: &mut Criterion) {
    let mut rng = Rng(2);
    let counts: Vec<i64> = (0..10_000).map(|_| 20 + rng.below_i64(300)).collect();
    let scores: Vec<f64> = (0..10_000)
        .map(|_| rng.next() as f64 / u64::MAX as f64)
        .collect();
    let recency = scores.iter().map(|s| 1.0 - s).collect::<Vec<_>>();
    let trust = vec![1.0; scores.len()];
    let mut g = c.benchmark_group("pack");
    g.bench_function("pack_10k_items_budget_2000", |b| {
        b.iter(|| pack(black_box(&counts), black_box(&scores), 2_000, None).unwrap());
    });
    g.bench_function("final_scores_10k", |b| {
        b.iter(|| final_scores(black_box(&scores), &recency, &trust, 0.3).unwrap());
    });
    g.finish();
}

fn bench_watermark(c: &mut Criterion) {
    let token = watermark::encode(b"secret", "brain", 123_456).unwrap();
    let mut g = c.benchmark_group("watermark");
    g.bench_function("encode", |b| {
        b.iter(|| watermark::encode(b"secret", black_box("brain"), black_box(123_456)));
    });
    g.bench_function("decode", |b| {
        b.iter(|| watermark::decode(b"secret", "brain", black_box(&token)));
    });
    g.finish();
}

fn bench_lexical(c: &mut Criterion) {
    let docs = corpus(10_000, 3);
    let ids: Vec<i64> = (0..10_000).collect();
    let mut g = c.benchmark_group("lexical");
    g.sample_size(10);
    g.bench_function("index_10k_docs", |b| {
        b.iter(|| {
            let idx = LexicalIndex::new();
            idx.add(&ids, &docs).unwrap();
            idx.len()
        });
    });
    let idx = LexicalIndex::new();
    idx.add(&ids, &docs).unwrap();
    let allowed: Vec<i64> = (0..10_000).step_by(7).collect();
    g.sample_size(50);
    g.bench_function("search_10k_k10", |b| {
        b.iter(|| idx.search(black_box("alice paris museum coffee"), 10, None, &[]));
    });
    g.bench_function("search_10k_k10_allowed_1in7", |b| {
        b.iter(|| {
            idx.search(
                black_box("alice paris museum coffee"),
                10,
                Some(&allowed),
                &[],
            )
        });
    });
    let top: Vec<String> = docs[..200].to_vec();
    g.bench_function("near_duplicates_200", |b| {
        b.iter(|| near_duplicates(black_box(&top), 0.9).unwrap());
    });
    g.finish();
}

fn bench_fuse(c: &mut Criterion) {
    let mut rng = Rng(4);
    let lanes: Vec<Vec<i64>> = (0..3)
        .map(|_| (0..200).map(|_| rng.below_i64(1_000)).collect())
        .collect();
    let mut g = c.benchmark_group("fuse");
    g.bench_function("rrf_3_lanes_200", |b| {
        b.iter(|| rrf_fuse(black_box(&lanes), &[1.0, 0.8, 0.5], 60.0).unwrap());
    });
    g.finish();
}

fn bench_rank(c: &mut Criterion) {
    // A fast Context's ranking pass over a 100,000-chunk Brain: 150 fused candidates, two turns of
    // spreading each way from the best 30, turns of one to three chunks.
    let mut rng = Rng(5);
    let n = 100_000_i64;
    let speakers = ["alice", "bob"];
    let chunks: Vec<NewChunk> = (0..n)
        .map(|id| NewChunk {
            id,
            ts: 1.7e9 + id as f64 * 60.0,
            source: Some(format!("conversation {}", id / 500)),
            speaker: Some(speakers[rng.below(2)].to_owned()),
            trust: 1.0,
            tokens: 20,
            joined: 18,
            line: 16,
        })
        .collect();
    let table = ChunkTable::new();
    table.add(chunks).unwrap();
    let mut id = 0;
    while id < n {
        let len = 1 + rng.below_i64(3);
        table.link(&(id..(id + len).min(n)).collect::<Vec<_>>());
        id += len;
    }
    let mut seen = HashSet::new();
    let fused: Vec<(i64, f64)> = (0..150)
        .map(|r| (rng.below_i64(100_000), 1.0 / (10.0 + f64::from(r))))
        .filter(|f| seen.insert(f.0))
        .collect();
    let named: HashSet<String> = ["alice".to_owned()].into();
    let kin: HashSet<String> = ["bob".to_owned()].into();
    let none = HashSet::new();
    let request = RankRequest {
        fused: &fused,
        vector: &fused[..fused.len() / 2],
        lexical: &fused[fused.len() / 2..],
        vector_weight: 0.1,
        lexical_weight: 0.15,
        named: &named,
        speaker_boost: 1.5,
        kin: &kin,
        stranger_factor: 0.4,
        focus: &[(1.7e9, 1.7e9 + 86_400.0)],
        time_boost: 2.0,
        neighbor_weights: &[0.3, 0.3],
        neighbor_gap: 3600.0,
        next_factor: 1.3,
        neighbor_sources: 30,
        admits: Admits::all(&none),
        now: 1.8e9,
        decay: 4.5e-8,
        recency_weight: 0.05,
        max_candidates: 150,
    };
    let mut g = c.benchmark_group("rank");
    g.bench_function("rank_150_fused_100k_chunks", |b| {
        b.iter(|| table.rank(black_box(&request)));
    });
    g.finish();
}

criterion_group!(
    benches,
    bench_tokens,
    bench_pack,
    bench_watermark,
    bench_lexical,
    bench_fuse,
    bench_rank
);
criterion_main!(benches);
