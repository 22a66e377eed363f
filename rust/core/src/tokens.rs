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

/// Number of `cl100k_base` tokens in `text`.
pub fn count(text: &str) -> usize {
    bpe().encode_ordinary(text).len()
}

/// Token counts of many texts.
pub fn count_many<S: AsRef<str>>(texts: &[S]) -> Vec<usize> {
    let bpe = bpe();
    texts
        .iter()
        .map(|t| bpe.encode_ordinary(t.as_ref()).len())
        .collect()
}

/// The longest prefix of `text` (cut on a char boundary) that has at most `max_tokens` tokens.
pub fn truncate(text: &str, max_tokens: usize) -> &str {
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
}
