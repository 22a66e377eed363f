//! Lexical retrieval: BM25 over an inverted index, and near-duplicate detection.
//!
//! Analysis ([`analyze`]): lowercase, split on every char that is not alphanumeric (Unicode
//! aware, so "naïve" and "東京" stay words), drop a short English stopword list, then stem with
//! the Snowball English stemmer (`rust-stemmers`), so "meetings" finds "meeting". Negations
//! ("no", "not") are deliberately kept: in memories they flip the meaning.
//!
//! Invariants of [`LexicalIndex`]:
//! - One entry per doc id: adding an existing id replaces its text; removing an unknown id is a
//!   no-op.
//! - Scores are BM25 with k1 = 1.2, b = 0.75 and the non-negative idf
//!   `ln(1 + (N - df + 0.5) / (df + 0.5))`; each distinct query term counts once. Every returned
//!   score is > 0 (a doc must share a term with the query).
//! - Results are ordered by score descending, then id ascending, so equal inputs give equal
//!   outputs.
//! - All methods take `&self`: state sits behind one `RwLock`, searches share it, writers
//!   analyze text before taking it so readers wait only for the pointer work.
//! - It holds only the terms of the docs it holds: a term no doc has any more leaves the index
//!   (its id is reused), so a removed text leaves no word behind, and churn never grows it.
//!
//! Near duplicates ([`near_duplicates`]) compare word 3-shingles with Jaccard similarity; words
//! are lowercased alphanumeric runs, without stopwords or stemming, since the question there is
//! "same text", not "same topic".

use std::collections::{HashMap, HashSet};
use std::hash::{DefaultHasher, Hash, Hasher};
use std::sync::LazyLock;

use rust_stemmers::{Algorithm, Stemmer};

use crate::error::{same_len, CoreError};
use crate::score::cmp_desc;
use crate::shared::Shared;

/// BM25 term-frequency saturation.
pub const K1: f64 = 1.2;
/// BM25 length normalisation.
pub const B: f64 = 0.75;

const STOPWORDS: &[&str] = &[
    "a", "an", "and", "are", "as", "at", "be", "been", "but", "by", "did", "do", "does", "for",
    "from", "had", "has", "have", "he", "her", "him", "his", "i", "if", "in", "into", "is", "it",
    "its", "me", "my", "of", "on", "or", "our", "she", "so", "than", "that", "the", "their",
    "them", "then", "there", "these", "they", "this", "to", "was", "we", "were", "what", "when",
    "where", "which", "who", "will", "with", "you", "your",
];

static STEMMER: LazyLock<Stemmer> = LazyLock::new(|| Stemmer::create(Algorithm::English));

/// Lowercased alphanumeric words of `text`, in order.
pub fn words(text: &str) -> impl Iterator<Item = String> + '_ {
    text.split(|c: char| !c.is_alphanumeric())
        .filter(|w| !w.is_empty())
        .map(str::to_lowercase)
}

/// Index terms of `text`: [`words`] minus stopwords, stemmed.
pub fn analyze(text: &str) -> Vec<String> {
    words(text)
        .filter(|w| !STOPWORDS.contains(&w.as_str()))
        .map(|w| STEMMER.stem(&w).into_owned())
        .collect()
}

struct Posting {
    tf: u32,
    doc_len: u32,
}

#[derive(Default)]
struct Inner {
    term_ids: HashMap<String, u32>,
    /// term id -> doc id -> posting. A map per term makes removal O(terms of the doc).
    postings: Vec<HashMap<i64, Posting>>,
    /// term id -> its term while a doc has it (to take it out of `term_ids` when none does).
    terms: Vec<Option<String>>,
    /// Ids of terms no doc has any more, for the next new terms.
    free: Vec<u32>,
    /// doc id -> distinct term ids of its text.
    docs: HashMap<i64, Box<[u32]>>,
    total_len: u64,
}

impl Inner {
    fn remove(&mut self, id: i64) {
        let Some(terms) = self.docs.remove(&id) else {
            return;
        };
        for &t in &terms {
            let postings = &mut self.postings[t as usize];
            if let Some(p) = postings.remove(&id) {
                self.total_len -= u64::from(p.tf);
            }
            if postings.is_empty() {
                *postings = HashMap::new(); // its table's memory too
                if let Some(term) = self.terms[t as usize].take() {
                    self.term_ids.remove(&term);
                }
                self.free.push(t);
            }
        }
    }

    fn term_id(&mut self, term: String) -> u32 {
        if let Some(&t) = self.term_ids.get(&term) {
            return t;
        }
        let t = if let Some(t) = self.free.pop() {
            t
        } else {
            self.postings.push(HashMap::new());
            self.terms.push(None);
            (self.postings.len() - 1) as u32
        };
        self.terms[t as usize] = Some(term.clone());
        self.term_ids.insert(term, t);
        t
    }

    fn insert(&mut self, id: i64, terms: Vec<String>) {
        self.remove(id);
        let doc_len = u32::try_from(terms.len()).unwrap_or(u32::MAX);
        let mut tfs: HashMap<u32, u32> = HashMap::new();
        for term in terms {
            let t = self.term_id(term);
            *tfs.entry(t).or_insert(0) += 1;
        }
        for (&t, &tf) in &tfs {
            self.postings[t as usize].insert(id, Posting { tf, doc_len });
            self.total_len += u64::from(tf);
        }
        self.docs.insert(id, tfs.into_keys().collect());
    }

    fn search(
        &self,
        terms: &[String],
        k: usize,
        allowed: Option<&HashSet<i64>>,
        excluded: &HashSet<i64>,
    ) -> Vec<(i64, f64)> {
        let n = self.docs.len() as f64;
        if k == 0 || self.docs.is_empty() {
            return Vec::new();
        }
        let avg_len = (self.total_len as f64 / n).max(1.0);
        let mut distinct: Vec<u32> = terms
            .iter()
            .filter_map(|t| self.term_ids.get(t).copied())
            .collect();
        distinct.sort_unstable();
        distinct.dedup();
        let mut acc: HashMap<i64, f64> = HashMap::new();
        for t in distinct {
            let postings = &self.postings[t as usize];
            if postings.is_empty() {
                continue;
            }
            let df = postings.len() as f64;
            let idf = (1.0 + (n - df + 0.5) / (df + 0.5)).ln();
            let mut add = |id: i64, p: &Posting| {
                let tf = f64::from(p.tf);
                let norm = K1 * (1.0 - B + B * f64::from(p.doc_len) / avg_len);
                *acc.entry(id).or_insert(0.0) += idf * tf * (K1 + 1.0) / (tf + norm);
            };
            match allowed {
                // Probe from the smaller side: a narrow filter over a common term stays cheap.
                Some(set) if set.len() < postings.len() => {
                    for id in set {
                        if let Some(p) = postings.get(id) {
                            if !excluded.contains(id) {
                                add(*id, p);
                            }
                        }
                    }
                }
                Some(set) => {
                    for (id, p) in postings {
                        if set.contains(id) && !excluded.contains(id) {
                            add(*id, p);
                        }
                    }
                }
                None => {
                    for (id, p) in postings {
                        if !excluded.contains(id) {
                            add(*id, p);
                        }
                    }
                }
            }
        }
        let mut hits: Vec<(i64, f64)> = acc.into_iter().collect();
        let order = |a: &(i64, f64), b: &(i64, f64)| cmp_desc(a.1, b.1).then(a.0.cmp(&b.0));
        if hits.len() > k {
            hits.select_nth_unstable_by(k - 1, order);
            hits.truncate(k);
        }
        hits.sort_unstable_by(order);
        hits
    }
}

/// A thread-safe BM25 index keyed by `i64` doc ids. See the module docs.
#[derive(Default)]
pub struct LexicalIndex {
    inner: Shared<Inner>,
}

impl LexicalIndex {
    /// An empty index.
    pub fn new() -> Self {
        Self::default()
    }

    /// Adds (or replaces) documents.
    ///
    /// # Errors
    /// [`CoreError::LengthMismatch`] when `ids` and `texts` differ in length; nothing is added.
    pub fn add<S: AsRef<str>>(&self, ids: &[i64], texts: &[S]) -> Result<(), CoreError> {
        same_len("doc_ids", ids.len(), "texts", texts.len())?;
        let analyzed: Vec<Vec<String>> = texts.iter().map(|t| analyze(t.as_ref())).collect();
        let mut inner = self.inner.write();
        for (&id, terms) in ids.iter().zip(analyzed) {
            inner.insert(id, terms);
        }
        Ok(())
    }

    /// Removes documents; unknown ids are ignored.
    pub fn remove(&self, ids: &[i64]) {
        let mut inner = self.inner.write();
        for &id in ids {
            inner.remove(id);
        }
    }

    /// The `k` best documents for `query`, optionally restricted to the ids in `allowed`, never
    /// one in `excluded`. An exclusion list stays short where an allow list would name nearly
    /// every document (a hosted deployment hides only the few `local_only` chunks).
    pub fn search(
        &self,
        query: &str,
        k: usize,
        allowed: Option<&[i64]>,
        excluded: &[i64],
    ) -> Vec<(i64, f64)> {
        let terms = analyze(query);
        if terms.is_empty() {
            return Vec::new();
        }
        let allowed: Option<HashSet<i64>> = allowed.map(|a| a.iter().copied().collect());
        let excluded: HashSet<i64> = excluded.iter().copied().collect();
        self.inner
            .read()
            .search(&terms, k, allowed.as_ref(), &excluded)
    }

    /// Number of documents.
    pub fn len(&self) -> usize {
        self.inner.read().docs.len()
    }

    /// Number of distinct terms held: those of the documents held, no more.
    pub fn term_count(&self) -> usize {
        self.inner.read().term_ids.len()
    }

    /// Whether the index holds no document.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

/// Hashes of the words of `text` as [`words`] makes them (lowercased), each word's bytes hashed once.
/// An ASCII word is lowercased in a reused buffer; only others go through `str::to_lowercase`.
fn word_hashes(text: &str) -> Vec<u64> {
    let mut lowered = String::new();
    text.split(|c: char| !c.is_alphanumeric())
        .filter(|w| !w.is_empty())
        .map(|w| {
            let mut h = DefaultHasher::new();
            if !w.is_ascii() {
                w.to_lowercase().hash(&mut h);
            } else if w.bytes().any(|b| b.is_ascii_uppercase()) {
                lowered.clear();
                lowered.push_str(w);
                lowered.make_ascii_lowercase();
                lowered.as_str().hash(&mut h);
            } else {
                w.hash(&mut h);
            }
            h.finish()
        })
        .collect()
}

/// Hashed shingles of one text, sorted and deduplicated: word 3-shingles, or the words themselves
/// when there are fewer than 3.
fn shingles(text: &str) -> Vec<u64> {
    let words = word_hashes(text);
    // DefaultHasher::new() has fixed keys, so hashes are stable within a process; the length
    // prefix keeps a 1-word set entry from colliding with a 3-word shingle.
    let hash = |parts: &[u64]| {
        let mut h = DefaultHasher::new();
        parts.len().hash(&mut h);
        parts.hash(&mut h);
        h.finish()
    };
    let mut out: Vec<u64> = if words.len() < 3 {
        words.chunks(1).map(hash).collect()
    } else {
        words.windows(3).map(hash).collect()
    };
    out.sort_unstable();
    out.dedup();
    out
}

/// Jaccard similarity of `common` shared items of two sets of `total` items together.
fn jaccard(common: usize, total: usize) -> f64 {
    common as f64 / (total - common) as f64
}

/// Whether two sorted, deduplicated sets have a Jaccard similarity of at least `threshold` (two empty
/// sets are identical: 1.0). The merge stops once the items left cannot bring it there: the
/// similarity grows with the items shared, so the most that could still be shared decides.
fn similar(a: &[u64], b: &[u64], threshold: f64) -> bool {
    let total = a.len() + b.len();
    if total == 0 {
        return 1.0 >= threshold;
    }
    let (mut i, mut j, mut common) = (0, 0, 0usize);
    while i < a.len() && j < b.len() {
        match a[i].cmp(&b[j]) {
            std::cmp::Ordering::Equal => {
                common += 1;
                i += 1;
                j += 1;
                continue;
            }
            std::cmp::Ordering::Less => i += 1,
            std::cmp::Ordering::Greater => j += 1,
        }
        let most = common + (a.len() - i).min(b.len() - j);
        if jaccard(most, total) < threshold {
            return false;
        }
    }
    jaccard(common, total) >= threshold
}

/// Indices, ascending, of texts whose Jaccard similarity to ANY earlier text (kept or not) is at
/// least `threshold`. Texts with fewer than 3 words compare word sets instead of 3-shingles;
/// texts with no word at all are duplicates of each other.
///
/// # Errors
/// [`CoreError::InvalidArgument`] unless `0 <= threshold <= 1`.
pub fn near_duplicates<S: AsRef<str>>(
    texts: &[S],
    threshold: f64,
) -> Result<Vec<usize>, CoreError> {
    if !(0.0..=1.0).contains(&threshold) {
        return Err(CoreError::InvalidArgument {
            name: "threshold",
            reason: "must be within [0, 1]",
        });
    }
    let sets: Vec<Vec<u64>> = texts.iter().map(|t| shingles(t.as_ref())).collect();
    let mut dups = Vec::new();
    for (i, s) in sets.iter().enumerate() {
        let is_dup = sets[..i].iter().any(|earlier| {
            // |A∩B|/|A∪B| <= min/max, so clearly different sizes skip the merge.
            let (lo, hi) = (s.len().min(earlier.len()), s.len().max(earlier.len()));
            if hi > 0 && (lo as f64) < threshold * hi as f64 {
                return false;
            }
            similar(s, earlier, threshold)
        });
        if is_dup {
            dups.push(i);
        }
    }
    Ok(dups)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn analysis() {
        assert_eq!(analyze("The Meetings, in Tōkyō!"), vec!["meet", "tōkyō"]);
        assert_eq!(analyze("I do not like it"), vec!["not", "like"]);
        assert!(analyze("  ,,, ").is_empty());
    }

    #[test]
    fn bm25_ranks_replaces_removes() {
        let idx = LexicalIndex::new();
        idx.add(
            &[1, 2, 3],
            &[
                "the cat sat on the old red mat near the door",
                "dogs chase cats",
                "quantum chromodynamics",
            ],
        )
        .unwrap();
        assert_eq!(idx.len(), 3);
        let hits = idx.search("quantum", 10, None, &[]);
        assert_eq!(hits.len(), 1);
        assert_eq!(hits[0].0, 3);
        assert!(hits[0].1 > 0.0);
        let cats = idx.search("cat", 10, None, &[]);
        assert_eq!(cats.iter().map(|h| h.0).collect::<Vec<_>>(), vec![2, 1]);
        assert_eq!(idx.search("cat", 10, Some(&[1]), &[]).len(), 1);
        assert_eq!(
            idx.search("cat", 10, None, &[2])
                .iter()
                .map(|h| h.0)
                .collect::<Vec<_>>(),
            vec![1]
        );
        assert!(idx.search("cat", 10, Some(&[1]), &[1]).is_empty());
        assert_eq!(idx.search("cat", 1, None, &[]).len(), 1);
        assert!(idx.search("cat", 0, None, &[]).is_empty());
        idx.add(&[3], &["cat food"]).unwrap();
        assert_eq!(idx.len(), 3);
        assert!(idx.search("quantum", 10, None, &[]).is_empty());
        assert_eq!(idx.term_count(), 10); // cat sat old red mat near door, dog chase, food (no quantum)
        idx.remove(&[1, 2, 3, 99]);
        assert!(idx.is_empty());
        assert_eq!(idx.term_count(), 0);
        assert!(idx.search("cat", 10, None, &[]).is_empty());
        assert!(idx.add(&[1], &["a", "b"]).is_err());
    }

    #[test]
    fn near_dups() {
        let texts = [
            "Alice moved to Paris in 2021 and loves it",
            "alice moved to paris in 2021 and loves it!",
            "Bob stays in Berlin",
            "",
            "...",
            "hi there",
            "there hi",
        ];
        assert_eq!(near_duplicates(&texts, 0.9).unwrap(), vec![1, 4, 6]);
        assert!(near_duplicates(&texts, 1.5).is_err());
        assert!(near_duplicates(&texts, f64::NAN).is_err());
    }
}
