//! `brainstore-core`: the algorithms behind brainstore's memory service, in pure Rust.
//!
//! No `PyO3`, no I/O, no clock, no randomness: every input is passed in, so every kernel is a
//! deterministic function that `cargo test` can check on its own. The Python extension
//! (`rust/py`) only converts values, releases the GIL and maps [`CoreError`].
//!
//! - [`tokens`]: `cl100k_base` BPE token counts and truncation.
//! - [`pack`]: greedy packing of scored items into a token budget, never over it.
//! - [`score`]: final scores (recency, trust) and reciprocal-rank fusion.
//! - [`rank`]: the per-chunk facts ranking reads, and the ranking pass after the lanes.
//! - [`lexical`]: BM25 inverted index and near-duplicate detection.
//! - [`watermark`]: signed, versioned change-sequence tokens.
//! - [`pattern`]: JSON Schema `pattern`s (ECMA-262 flavour), bounded and matched in linear time.

pub mod error;
pub mod lexical;
pub mod pack;
pub mod pattern;
pub mod rank;
pub mod score;
mod shared;
pub mod tokens;
pub mod watermark;

pub use error::CoreError;
