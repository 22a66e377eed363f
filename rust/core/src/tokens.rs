//! Token counting with a real BPE tokenizer: `cl100k_base`, via `tiktoken-rs`.
//!
//! Invariants:
//! - Text is encoded as ordinary text: strings such as `<|endoftext|>` count as the tokens of
//!   their characters, never as one special token, because user content is never a control
//!   sequence.
//! - The BPE ranks are embedded in `tiktoken-rs` and loaded once per process (its `LazyLock`
//!   singleton); nothing is read from disk or network.
//! - [`truncate`] returns a prefix of its input that ends on a char boundary and counts at most
//!   `max_tokens` tokens.
//! - No input panics: a whitespace run longer than [`LONGEST_RUN`] is encoded in pieces (see
//!   [`pieces`]).

use tiktoken_rs::CoreBPE;

/// The tokenizer every budget in brainstore is counted with.
pub const TOKENIZER_NAME: &str = "cl100k_base";

fn bpe() -> &'static CoreBPE {
    tiktoken_rs::cl100k_base_singleton()
}

/// Forces the one-time load of the BPE ranks (about 100k entries), so that the first
/// request does not pay for it.
pub fn warm_up() {
    let _ = bpe();
}

/// Bytes of whitespace encoded in one piece at most. `tiktoken-rs` splits text with a
/// backtracking regex (`\s+(?!\S)`) whose stack overflowed on a run of about a million
/// whitespace characters before a non-space one, and it unwraps that error: a panic. A run cut
/// in pieces counts at most one token more a piece than it would whole.
pub const LONGEST_RUN: usize = 1 << 14;

/// `text` as consecutive byte ranges, cut only inside whitespace runs, so that no range holds a
/// run longer than [`LONGEST_RUN`] bytes (plus one char).
fn pieces(text: &str) -> Vec<(usize, usize)> {
    if text.len() <= LONGEST_RUN {
        return vec![(0, text.len())];
    }
    let mut out = Vec::new();
    let mut start = 0;
    let mut run: Option<usize> = None; // where the whitespace run being read began
    for (at, ch) in text.char_indices() {
        if !ch.is_whitespace() {
            run = None;
            continue;
        }
        let began = *run.get_or_insert(at);
        if at - began >= LONGEST_RUN {
            out.push((start, at));
            start = at;
            run = Some(at);
        }
    }
    out.push((start, text.len()));
    out
}

/// Number of `cl100k_base` tokens in `text`.
pub fn count(text: &str) -> usize {
    let bpe = bpe();
    pieces(text)
        .into_iter()
        .map(|(from, to)| bpe.encode_ordinary(&text[from..to]).len())
        .sum()
}

/// Token counts of many texts.
pub fn count_many<S: AsRef<str>>(texts: &[S]) -> Vec<usize> {
    texts.iter().map(|t| count(t.as_ref())).collect()
}

/// The longest prefix of `text` (cut on a char boundary) that has at most `max_tokens` tokens.
pub fn truncate(text: &str, max_tokens: usize) -> &str {
    let ranges = pieces(text);
    if ranges.len() == 1 {
        return truncate_piece(text, max_tokens);
    }
    // The pieces of a prefix are the prefix's pieces of `text`: whole ones while they fit, then the
    // part of the next one that does.
    let mut used = 0;
    for (from, to) in ranges {
        let tokens = count(&text[from..to]);
        if used + tokens > max_tokens {
            return &text[..from + truncate_piece(&text[from..to], max_tokens - used).len()];
        }
        used += tokens;
    }
    text
}

fn truncate_piece(text: &str, max_tokens: usize) -> &str {
    let bpe = bpe();
    let tokens = bpe.encode_ordinary(text);
    if tokens.len() <= max_tokens {
        return text;
    }
    let mut keep = max_tokens;
    loop {
        // Ordinary tokens are byte slices of the input in order, so the first `keep` tokens
        // span exactly the first `byte_len` bytes; a token may end inside a multi-byte char,
        // hence the walk back to a boundary.
        let byte_len = bpe.decode_bytes(&tokens[..keep]).map_or(0, |b| b.len());
        let mut end = byte_len.min(text.len());
        while !text.is_char_boundary(end) {
            end -= 1;
        }
        let prefix = &text[..end];
        // BPE is not prefix-monotone in theory: re-encoding the cut may merge differently.
        // Verify, and give up one more token in the rare case it does not fit.
        if keep == 0 || bpe.encode_ordinary(prefix).len() <= max_tokens {
            return prefix;
        }
        keep -= 1;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn known_counts() {
        // Reference values from OpenAI's tiktoken (cl100k_base).
        assert_eq!(count(""), 0);
        assert_eq!(count("hello world"), 2);
        assert_eq!(count("tiktoken is great!"), 6);
        assert_eq!(count("<|endoftext|>"), 7);
        assert_eq!(count_many(&["hello world", ""]), vec![2, 0]);
    }

    #[test]
    fn truncate_respects_budget_and_chars() {
        let text = "héllo wörld, ünïcödé 日本語のテキスト 🎉🎉🎉 end";
        for max in 0..=count(text) + 1 {
            let cut = truncate(text, max);
            assert!(text.starts_with(cut));
            assert!(count(cut) <= max, "{max}: {cut:?}");
        }
        assert_eq!(truncate(text, 10_000), text);
        assert_eq!(truncate(text, 0), "");
    }

    #[test]
    fn a_million_spaces_before_a_word_count_without_a_panic() {
        // tiktoken-rs panicked (its regex's stack overflow, unwrapped) from about 999,999 on
        for blank in [" ", "\t", " \t", "\u{a0}", "\u{3000}"] {
            let text = format!("{}x", blank.repeat(1_000_000 / blank.len()));
            let tokens = count(&text);
            let whole = count(&format!("{}x", blank.repeat(LONGEST_RUN / blank.len())));
            assert!(
                tokens >= whole && tokens < text.len(),
                "{blank:?}: {tokens}"
            );
            for max in [0, 1, tokens / 2, tokens - 1, tokens] {
                let cut = truncate(&text, max);
                assert!(
                    text.starts_with(cut) && count(cut) <= max,
                    "{blank:?} {max}"
                );
            }
        }
    }

    #[test]
    fn text_without_long_runs_is_one_piece() {
        let text = "word ".repeat(100_000);
        assert_eq!(pieces(&text), vec![(0, text.len())]);
        assert_eq!(count(&text), bpe().encode_ordinary(&text).len());
    }
}
