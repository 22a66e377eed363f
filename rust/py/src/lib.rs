//! `brainstore_core._native`: the `PyO3` face of the Rust crate `brainstore-core`, shipped as the
//! private extension of the Python distribution `brainstore-core` (`rust/py/pyproject.toml`).
//!
//! This crate holds no algorithm. Each function (1) extracts its arguments into owned Rust
//! values while holding the GIL, (2) runs the kernel through [`detached`], the one place the GIL
//! is released, and (3) maps a [`CoreError`] through [`to_py_err`], the one error mapping.
//! Only the typed facade `brainstore_core/__init__.py` imports this module; it documents the
//! semantics, and `_native.pyi` (checked by `mypy.stubtest`) states the signatures.

// Arguments are extracted as owned values on purpose: borrowing from Python objects would tie
// them to the GIL, and the kernels run after the GIL is released.
#![expect(
    clippy::needless_pass_by_value,
    reason = "owned arguments can cross into `detached`"
)]

use std::any::Any;
use std::collections::HashSet;
use std::panic::{self, AssertUnwindSafe};

use brainstore_core::rank::{self, Admits, NewChunk, RankRequest};
use brainstore_core::{lexical, pack as packing, pattern, score, tokens, watermark, CoreError};
use pyo3::exceptions::{PyRuntimeError, PyValueError};
use pyo3::marker::Ungil;
use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyString};

/// Every core error is a caller mistake (bad lengths or ranges, a refused pattern), hence
/// `ValueError`.
fn to_py_err(err: CoreError) -> PyErr {
    match err {
        CoreError::LengthMismatch { .. }
        | CoreError::NegativeTokenCount { .. }
        | CoreError::InvalidArgument { .. }
        | CoreError::InvalidPattern { .. } => PyValueError::new_err(err.to_string()),
    }
}

/// A Python `str` as Rust text. Lone surrogates (which `str` allows and UTF-8 cannot hold)
/// become replacement characters (U+FFFD), so a match never raises for a `str`.
fn lossy(text: &Bound<'_, PyString>) -> String {
    text.to_string_lossy().into_owned()
}

/// Runs `work` with the GIL released, so other Python threads run meanwhile. Inputs must
/// already be owned Rust values (`Ungil`), which is why arguments are extracted first.
///
/// A panic in a kernel (a bug here or in a dependency: `tiktoken-rs` unwraps its regex's errors)
/// is a `RuntimeError`. Left to unwind, it reached Python as `PanicException`, a `BaseException`
/// that no server's handler catches: it ended the worker process serving every tenant.
fn detached<T: Ungil + Send, F: Ungil + Send + FnOnce() -> T>(
    py: Python<'_>,
    work: F,
) -> PyResult<T> {
    py.detach(|| {
        panic::catch_unwind(AssertUnwindSafe(work)).map_err(|cause| panic_message(&*cause))
    })
    .map_err(|message| PyRuntimeError::new_err(format!("a native kernel failed: {message}")))
}

fn panic_message(cause: &(dyn Any + Send)) -> String {
    cause
        .downcast_ref::<&str>()
        .map(|message| (*message).to_owned())
        .or_else(|| cause.downcast_ref::<String>().cloned())
        .unwrap_or_else(|| "a panic".to_owned())
}

#[pyfunction]
fn token_count(py: Python<'_>, text: String) -> PyResult<usize> {
    detached(py, || tokens::count(&text))
}

#[pyfunction]
fn count_tokens(py: Python<'_>, texts: Vec<String>) -> PyResult<Vec<usize>> {
    detached(py, || tokens::count_many(&texts))
}

#[pyfunction]
fn truncate_tokens(py: Python<'_>, text: String, max_tokens: usize) -> PyResult<String> {
    detached(py, || tokens::truncate(&text, max_tokens).to_owned())
}

/// One ranked chunk as `rank` hands it to Python: id, score, tokens, joined, before.
type Ranked = (i64, f64, i64, i64, Option<i64>);

/// Two columns of one item each, as a `pack` option takes them.
type Columns<'a> = (&'a [i64], &'a [i64]);

/// Two optional columns that are given together or not at all.
fn pair<'a>(
    a: Option<&'a Vec<i64>>,
    b: Option<&'a Vec<i64>>,
    name: &'static str,
) -> Result<Option<Columns<'a>>, CoreError> {
    match (a, b) {
        (Some(a), Some(b)) => Ok(Some((a.as_slice(), b.as_slice()))),
        (None, None) => Ok(None),
        _ => Err(CoreError::InvalidArgument {
            name,
            reason: "the two columns go together",
        }),
    }
}

#[pyfunction]
#[pyo3(signature = (token_counts, scores, budget, prev = None, joined = None, groups = Vec::new()))]
fn pack(
    py: Python<'_>,
    token_counts: Vec<i64>,
    scores: Vec<f64>,
    budget: i64,
    prev: Option<Vec<i64>>,
    joined: Option<Vec<i64>>,
    groups: Vec<(Vec<i64>, Vec<i64>)>,
) -> PyResult<Vec<usize>> {
    detached(py, || {
        let runs = pair(prev.as_ref(), joined.as_ref(), "runs (prev and joined)")?
            .map(|(prev, joined)| packing::Runs { prev, joined });
        let groupings: Vec<packing::Groups<'_>> = groups
            .iter()
            .map(|(of, cost)| packing::Groups { of, cost })
            .collect();
        packing::pack_grouped(&token_counts, &scores, budget, runs, &groupings)
    })?
    .map_err(to_py_err)
}

#[pyfunction]
fn encode_watermark(secret: &[u8], brain_key: &str, seq: u64) -> PyResult<String> {
    watermark::encode(secret, brain_key, seq).map_err(to_py_err)
}

/// Takes the token as a Python `str` object rather than `&str`, so that a string Rust cannot
/// borrow (lone surrogates) is an invalid watermark instead of a `UnicodeEncodeError`.
#[pyfunction]
fn decode_watermark(secret: &[u8], brain_key: &str, token: &Bound<'_, PyString>) -> Option<u64> {
    let token = token.to_str().ok()?;
    watermark::decode(secret, brain_key, token)
}

#[pyfunction]
#[pyo3(signature = (lanes, weights, k = 60.0))]
fn rrf_fuse(
    py: Python<'_>,
    lanes: Vec<Vec<i64>>,
    weights: Vec<f64>,
    k: f64,
) -> PyResult<Vec<(i64, f64)>> {
    detached(py, || score::rrf_fuse(&lanes, &weights, k))?.map_err(to_py_err)
}

#[pyfunction]
fn final_scores(
    py: Python<'_>,
    base: Vec<f64>,
    recency: Vec<f64>,
    trust: Vec<f64>,
    recency_weight: f64,
) -> PyResult<Vec<f64>> {
    detached(py, || {
        score::final_scores(&base, &recency, &trust, recency_weight)
    })?
    .map_err(to_py_err)
}

#[pyfunction]
#[pyo3(signature = (texts, threshold = 0.9))]
fn near_duplicates(py: Python<'_>, texts: Vec<String>, threshold: f64) -> PyResult<Vec<usize>> {
    detached(py, || lexical::near_duplicates(&texts, threshold))?.map_err(to_py_err)
}

/// Ids as a list of ints, or packed as the native-endian bytes of 8-byte integers (what the facade
/// makes of an int64 array): a filter admitting 50,000 chunks took about 2 ms more as a Python list.
/// Only a `bytes` object is packed: a list of small ints would also extract as `Vec<u8>`.
#[derive(FromPyObject)]
enum Ids<'py> {
    Packed(Bound<'py, PyBytes>),
    Listed(Vec<i64>),
}

impl Ids<'_> {
    fn into_vec(self) -> PyResult<Vec<i64>> {
        match self {
            Ids::Listed(ids) => Ok(ids),
            Ids::Packed(bytes) => {
                let (words, rest) = bytes.as_bytes().as_chunks::<8>();
                if !rest.is_empty() {
                    return Err(PyValueError::new_err(
                        "packed ids must be a whole number of 8-byte integers",
                    ));
                }
                Ok(words.iter().map(|w| i64::from_ne_bytes(*w)).collect())
            }
        }
    }
}

/// BM25 index; `frozen` because the core index locks internally, so methods need only `&self`
/// and threads never contend on a `PyO3` borrow flag.
#[pyclass(frozen, module = "brainstore_core._native")]
struct LexicalIndex {
    inner: lexical::LexicalIndex,
}

#[pymethods]
impl LexicalIndex {
    #[new]
    fn new() -> Self {
        Self {
            inner: lexical::LexicalIndex::new(),
        }
    }

    fn add(&self, py: Python<'_>, doc_ids: Vec<i64>, texts: Vec<String>) -> PyResult<()> {
        detached(py, || self.inner.add(&doc_ids, &texts))?.map_err(to_py_err)
    }

    fn remove(&self, py: Python<'_>, doc_ids: Vec<i64>) -> PyResult<()> {
        detached(py, || self.inner.remove(&doc_ids))
    }

    #[pyo3(signature = (query, k, allowed = None, excluded = Vec::new()))]
    fn search(
        &self,
        py: Python<'_>,
        query: String,
        k: usize,
        allowed: Option<Ids<'_>>,
        excluded: Vec<i64>,
    ) -> PyResult<Vec<(i64, f64)>> {
        let allowed = allowed.map(Ids::into_vec).transpose()?;
        detached(py, || {
            self.inner.search(&query, k, allowed.as_deref(), &excluded)
        })
    }

    fn __len__(&self, py: Python<'_>) -> PyResult<usize> {
        // Waits on the index lock when a writer holds it, so never with the GIL held.
        detached(py, || self.inner.len())
    }

    fn term_count(&self, py: Python<'_>) -> PyResult<usize> {
        detached(py, || self.inner.term_count())
    }
}

/// What ranking reads of each chunk of one Brain's index; `frozen` because the core table locks
/// internally. The lookups of one id hold the GIL: they are a hash probe, cheaper than releasing it.
#[pyclass(frozen, module = "brainstore_core._native")]
struct ChunkTable {
    inner: rank::ChunkTable,
}

#[pymethods]
impl ChunkTable {
    #[new]
    fn new() -> Self {
        Self {
            inner: rank::ChunkTable::new(),
        }
    }

    #[expect(clippy::too_many_arguments, reason = "one column per chunk fact")]
    #[pyo3(signature = (ids, ts, sources, speakers, trusts, tokens, joined, lines = None))]
    fn add(
        &self,
        py: Python<'_>,
        ids: Vec<i64>,
        ts: Vec<f64>,
        sources: Vec<Option<String>>,
        speakers: Vec<Option<String>>,
        trusts: Vec<f64>,
        tokens: Vec<i64>,
        joined: Vec<i64>,
        lines: Option<Vec<i64>>,
    ) -> PyResult<()> {
        let n = ids.len();
        let lines = lines.unwrap_or_else(|| tokens.clone());
        if [
            ts.len(),
            sources.len(),
            speakers.len(),
            trusts.len(),
            tokens.len(),
            joined.len(),
            lines.len(),
        ]
        .iter()
        .any(|&len| len != n)
        {
            return Err(PyValueError::new_err("every column needs one value per id"));
        }
        let chunks: Vec<NewChunk> = ids
            .into_iter()
            .zip(ts)
            .zip(sources.into_iter().zip(speakers))
            .zip(
                trusts
                    .into_iter()
                    .zip(tokens)
                    .zip(joined.into_iter().zip(lines)),
            )
            .map(
                |(((id, ts), (source, speaker)), ((trust, tokens), (joined, line)))| NewChunk {
                    id,
                    ts,
                    source,
                    speaker,
                    trust,
                    tokens,
                    joined,
                    line,
                },
            )
            .collect();
        detached(py, || self.inner.add(chunks))?.map_err(to_py_err)
    }

    fn link(&self, py: Python<'_>, ordered: Vec<i64>) -> PyResult<()> {
        detached(py, || self.inner.link(&ordered))
    }

    fn remove(&self, py: Python<'_>, ids: Vec<i64>) -> PyResult<()> {
        detached(py, || self.inner.remove(&ids))
    }

    fn previous(&self, id: i64) -> Option<i64> {
        self.inner.previous(id)
    }

    fn turns(&self, py: Python<'_>, ids: Vec<i64>, gap: f64) -> PyResult<Vec<i64>> {
        detached(py, || self.inner.turns(&ids, gap))
    }

    fn token_counts(&self, id: i64) -> Option<(i64, i64)> {
        self.inner.token_counts(id)
    }

    fn line_tokens(&self, py: Python<'_>, ids: Vec<i64>) -> PyResult<Vec<Option<i64>>> {
        detached(py, || self.inner.line_tokens(&ids))
    }

    fn names(&self) -> usize {
        self.inner.names()
    }

    fn __len__(&self) -> usize {
        self.inner.len()
    }

    #[expect(
        clippy::too_many_arguments,
        reason = "the retrieval configuration, one knob each"
    )]
    #[pyo3(signature = (
        fused, vector, lexical, *, vector_weight, lexical_weight, named, speaker_boost, focus,
        time_boost, neighbor_weights, neighbor_gap, next_factor, neighbor_sources, since, until,
        sources, excluded, now, decay, recency_weight, max_candidates, kin = Vec::new(),
        stranger_factor = 1.0
    ))]
    fn rank(
        &self,
        py: Python<'_>,
        fused: Vec<(i64, f64)>,
        vector: Vec<(i64, f64)>,
        lexical: Vec<(i64, f64)>,
        vector_weight: f64,
        lexical_weight: f64,
        named: Vec<String>,
        speaker_boost: f64,
        focus: Vec<(f64, f64)>,
        time_boost: f64,
        neighbor_weights: Vec<f64>,
        neighbor_gap: f64,
        next_factor: f64,
        neighbor_sources: usize,
        since: Option<f64>,
        until: Option<f64>,
        sources: Option<Vec<String>>,
        excluded: Vec<i64>,
        now: f64,
        decay: f64,
        recency_weight: f64,
        max_candidates: usize,
        kin: Vec<String>,
        stranger_factor: f64,
    ) -> PyResult<Vec<Ranked>> {
        detached(py, || {
            let named: HashSet<String> = named.into_iter().collect();
            let kin: HashSet<String> = kin.into_iter().collect();
            let sources: Option<HashSet<String>> = sources.map(|names| names.into_iter().collect());
            let excluded: HashSet<i64> = excluded.into_iter().collect();
            let admits = Admits {
                since,
                until,
                sources: sources.as_ref(),
                excluded: &excluded,
            };
            let request = RankRequest {
                fused: &fused,
                vector: &vector,
                lexical: &lexical,
                vector_weight,
                lexical_weight,
                named: &named,
                speaker_boost,
                kin: &kin,
                stranger_factor,
                focus: &focus,
                time_boost,
                neighbor_weights: &neighbor_weights,
                neighbor_gap,
                next_factor,
                neighbor_sources,
                admits,
                now,
                decay,
                recency_weight,
                max_candidates,
            };
            self.inner
                .rank(&request)
                .into_iter()
                .map(|r| (r.id, r.score, r.tokens, r.joined, r.before))
                .collect()
        })
    }
}

/// A JSON Schema `pattern`, compiled once; `frozen` and `Sync`, so threads share it freely.
#[pyclass(frozen, module = "brainstore_core._native")]
struct Pattern {
    inner: pattern::Pattern,
}

#[pymethods]
impl Pattern {
    /// Compiling is bounded (length, nesting, compiled size) but not free, so it too runs with
    /// the GIL released.
    #[new]
    fn new(py: Python<'_>, source: String) -> PyResult<Self> {
        detached(py, || pattern::Pattern::new(&source))?
            .map(|inner| Self { inner })
            .map_err(to_py_err)
    }

    #[getter]
    fn source(&self) -> &str {
        self.inner.as_str()
    }

    fn is_match(&self, py: Python<'_>, text: &Bound<'_, PyString>) -> PyResult<bool> {
        let text = lossy(text);
        detached(py, || self.inner.is_match(&text))
    }

    fn matches(&self, py: Python<'_>, texts: Vec<Bound<'_, PyString>>) -> PyResult<Vec<bool>> {
        let texts: Vec<String> = texts.iter().map(lossy).collect();
        detached(py, || self.inner.matches(&texts))
    }
}

#[pymodule]
#[pyo3(name = "_native")]
fn native(m: &Bound<'_, PyModule>) -> PyResult<()> {
    // The Cargo workspace version is the distribution's (maturin reads it), so the two cannot differ.
    m.add("__version__", env!("CARGO_PKG_VERSION"))?;
    m.add("TOKENIZER_NAME", tokens::TOKENIZER_NAME)?;
    m.add("MAX_PATTERN_CHARS", pattern::MAX_PATTERN_CHARS)?;
    m.add_function(wrap_pyfunction!(token_count, m)?)?;
    m.add_function(wrap_pyfunction!(count_tokens, m)?)?;
    m.add_function(wrap_pyfunction!(truncate_tokens, m)?)?;
    m.add_function(wrap_pyfunction!(pack, m)?)?;
    m.add_function(wrap_pyfunction!(encode_watermark, m)?)?;
    m.add_function(wrap_pyfunction!(decode_watermark, m)?)?;
    m.add_function(wrap_pyfunction!(rrf_fuse, m)?)?;
    m.add_function(wrap_pyfunction!(final_scores, m)?)?;
    m.add_function(wrap_pyfunction!(near_duplicates, m)?)?;
    m.add_class::<LexicalIndex>()?;
    m.add_class::<ChunkTable>()?;
    m.add_class::<Pattern>()?;
    Ok(())
}
