//! JSON Schema `pattern`: ECMA-262 flavoured regular expressions matched in linear time.
//!
//! A pattern comes from a caller (a Context request's schema), so it is hostile until proven
//! otherwise. Three things keep it harmless:
//!
//! - Matching runs on the `regex` crate (finite automata, no backtracking): time is linear in the
//!   text for a compiled pattern, whatever the pattern. `^(a+)+$` against 50,000 `a` then `b`
//!   takes microseconds, where a backtracking engine never returns.
//! - Compilation is bounded: at most [`MAX_PATTERN_CHARS`] characters, groups nested at most
//!   [`MAX_NESTING`] deep, a compiled program of at most [`COMPILED_SIZE_LIMIT`] bytes and a lazy
//!   DFA cache of at most [`DFA_SIZE_LIMIT`] bytes (past it the engine falls back to its
//!   still-linear NFA simulation). Counted repetitions that would blow up (`(a{100}){100}`) are
//!   refused, not built.
//! - Features a finite automaton cannot provide (backreferences, lookahead, lookbehind) are
//!   refused with a reason instead of being approximated.
//!
//! Semantics follow JSON Schema: an unanchored search (`"b"` matches `"abc"`; anchor with `^`
//! and `$`). The ECMA-262 meanings of `\d`, `\w`, `\b` (ASCII), `\s` (ECMA's whitespace set) and
//! `.` (anything but a line terminator) are kept by rewriting them before compilation, since the
//! `regex` crate's own are Unicode-wide. Syntax outside ECMA-262 (inline flags `(?i)`, `(?P<n>`,
//! `\A`, `\z`) is refused, so a pattern means one thing wherever it is validated.

use std::fmt::Write as _;

use crate::CoreError;

/// Longest pattern accepted, in characters (Unicode scalar values).
pub const MAX_PATTERN_CHARS: usize = 256;
/// Deepest nesting of groups and repetitions accepted by the parser.
pub const MAX_NESTING: u32 = 16;
/// Largest compiled program, in bytes. Measured (release build, this 2-core machine): the costliest
/// patterns of at most 256 characters take under 2 ms to compile or to be refused for size
/// (`(.{40}){6}` 1.8 ms, `\p{L}{100}` 1.4 ms, both refused; `(\s{30}){8}` 1.3 ms, accepted).
pub const COMPILED_SIZE_LIMIT: usize = 256 * 1024;
/// Largest lazy DFA cache per matching thread, in bytes. A schema's patterns live for one
/// request, so this is transient; past it the engine matches with its NFA, still in linear time.
pub const DFA_SIZE_LIMIT: usize = 1024 * 1024;

// ECMA-262's \s: WhiteSpace and LineTerminator code points.
const ECMA_SPACE: &str =
    r"\t\n\x0B\x0C\r \xA0\x{1680}\x{2000}-\x{200A}\x{2028}\x{2029}\x{202F}\x{205F}\x{3000}\x{FEFF}";
const ECMA_WORD: &str = "0-9A-Za-z_";
// ECMA-262's `.` without the s flag: anything but a line terminator.
const ECMA_DOT: &str = r"[^\n\r\x{2028}\x{2029}]";

/// A compiled, bounded pattern. Cheap to share between threads (`Sync`).
#[derive(Debug, Clone)]
pub struct Pattern {
    source: String,
    regex: regex::Regex,
}

impl Pattern {
    /// Compiles `source`.
    ///
    /// # Errors
    ///
    /// [`CoreError::InvalidPattern`], with a reason for the caller, when `source` is longer than
    /// [`MAX_PATTERN_CHARS`], is not ECMA-262 syntax, uses a feature a finite automaton lacks,
    /// nests deeper than [`MAX_NESTING`] or compiles beyond [`COMPILED_SIZE_LIMIT`].
    pub fn new(source: &str) -> Result<Self, CoreError> {
        let chars = source.chars().count();
        if chars > MAX_PATTERN_CHARS {
            return Err(invalid(format!(
                "longer than {MAX_PATTERN_CHARS} characters ({chars})"
            )));
        }
        let translated = translate(source)?;
        let regex = regex::RegexBuilder::new(&translated)
            .size_limit(COMPILED_SIZE_LIMIT)
            .dfa_size_limit(DFA_SIZE_LIMIT)
            .nest_limit(MAX_NESTING)
            .build()
            .map_err(|err| invalid(describe(&err)))?;
        Ok(Self {
            source: source.to_owned(),
            regex,
        })
    }

    /// The pattern as given.
    pub fn as_str(&self) -> &str {
        &self.source
    }

    /// Whether the pattern occurs anywhere in `text` (an unanchored search). Linear in `text`.
    pub fn is_match(&self, text: &str) -> bool {
        self.regex.is_match(text)
    }

    /// [`Pattern::is_match`] of each text, in input order.
    pub fn matches<S: AsRef<str>>(&self, texts: &[S]) -> Vec<bool> {
        texts
            .iter()
            .map(|t| self.regex.is_match(t.as_ref()))
            .collect()
    }
}

fn invalid(reason: String) -> CoreError {
    CoreError::InvalidPattern { reason }
}

/// One line from the `regex` crate's error: its syntax errors span several lines (the pattern,
/// carets under it, then `error: ...`) and point into the rewritten pattern, so only the
/// `error:` line is kept.
fn describe(err: &regex::Error) -> String {
    match err {
        regex::Error::CompiledTooBig(limit) => {
            format!("compiles to more than {limit} bytes (a repetition is too large)")
        }
        regex::Error::Syntax(text) => text
            .lines()
            .find_map(|line| line.trim().strip_prefix("error: "))
            .unwrap_or("not a valid regular expression")
            .to_owned(),
        _ => "not a valid regular expression".to_owned(),
    }
}

/// Rewrites an ECMA-262 pattern into the `regex` crate's syntax, refusing what cannot be kept.
fn translate(source: &str) -> Result<String, CoreError> {
    let chars: Vec<char> = source.chars().collect();
    let mut out = String::with_capacity(source.len() * 2);
    let mut in_class = false;
    // 0: the last item was not a quantifier, 1: it was, 2: it was a lazy one (`*?`).
    let mut quantified = 0_u8;
    let mut i = 0;
    while i < chars.len() {
        let c = chars[i];
        if !in_class {
            // ECMA refuses a quantifier of a quantifier (`a**`) where `regex` nests them.
            quantified = match (c, quantified) {
                ('*' | '+' | '{', 1 | 2) | ('?', 2) => {
                    return Err(invalid(format!("nothing to repeat before {c:?}")))
                }
                ('?', 1) => 2,
                ('*' | '+' | '?' | '}', _) => 1,
                _ => 0,
            };
        }
        match c {
            '\\' => {
                let Some(&next) = chars.get(i + 1) else {
                    return Err(invalid("ends with a lone backslash".to_owned()));
                };
                i += escape(&chars, i + 1, next, in_class, &mut out)?;
                continue;
            }
            '[' if !in_class => {
                // ECMA: `[]` matches nothing and `[^]` anything; in `regex` a `]` there is literal.
                let negated = chars.get(i + 1) == Some(&'^');
                let body = if negated { i + 2 } else { i + 1 };
                if chars.get(body) == Some(&']') {
                    out.push_str(if negated {
                        r"[\x00-\x{10FFFF}]"
                    } else {
                        r"[^\x00-\x{10FFFF}]"
                    });
                    i = body + 1;
                    continue;
                }
                out.push_str(if negated { "[^" } else { "[" });
                in_class = true;
                i = body;
                continue;
            }
            ']' if in_class => {
                out.push(']');
                in_class = false;
            }
            // Inside an ECMA class these are literal; in `regex` they open nested classes or
            // set operations (`&&`, `--`, `~~`).
            '[' | '&' | '~' if in_class => {
                out.push('\\');
                out.push(c);
            }
            '-' if in_class && chars.get(i + 1) == Some(&'-') => out.push_str(r"\-"),
            '.' if !in_class => out.push_str(ECMA_DOT),
            '(' if !in_class && chars.get(i + 1) == Some(&'?') => {
                i += group(&chars, i, &mut out)?;
                continue;
            }
            // `regex` ignores whitespace only in the x flag (refused), so the rest is literal;
            // ECMA has no `#` comments either.
            _ => out.push(c),
        }
        i += 1;
    }
    if in_class {
        return Err(invalid("unclosed character class".to_owned()));
    }
    Ok(out)
}

/// `(?` at `at`: only non-capturing and named groups exist in both dialects.
fn group(chars: &[char], at: usize, out: &mut String) -> Result<usize, CoreError> {
    match (chars.get(at + 2), chars.get(at + 3)) {
        (Some(':'), _) => {
            out.push_str("(?:");
            Ok(3)
        }
        (Some('=' | '!'), _) | (Some('<'), Some('=' | '!')) => Err(invalid(
            "lookahead and lookbehind ((?=, (?!, (?<=, (?<!) are not supported".to_owned(),
        )),
        (Some('<'), _) => {
            out.push_str("(?<");
            Ok(3)
        }
        _ => Err(invalid(
            "only (?:...) and (?<name>...) groups are supported (no inline flags)".to_owned(),
        )),
    }
}

/// The escape `\next` at `chars[at]`; returns how many characters it consumed (backslash included).
fn escape(
    chars: &[char],
    at: usize,
    next: char,
    in_class: bool,
    out: &mut String,
) -> Result<usize, CoreError> {
    let class = |body: &str, negated: bool, out: &mut String| {
        // A class inside a class is a union in `regex`, so the same text works in both places.
        out.push_str(if negated { "[^" } else { "[" });
        out.push_str(body);
        out.push(']');
    };
    match next {
        'd' | 'D' => class("0-9", next == 'D', out),
        'w' | 'W' => class(ECMA_WORD, next == 'W', out),
        's' | 'S' => class(ECMA_SPACE, next == 'S', out),
        'b' if in_class => out.push_str(r"\x08"),
        'b' | 'B' => {
            out.push_str(if next == 'b' {
                r"(?-u:\b)"
            } else {
                r"(?-u:\B)"
            });
        }
        'c' => {
            // \cX: the control character X % 32.
            return match chars.get(at + 1) {
                Some(&letter) if letter.is_ascii_alphabetic() => {
                    push_code(out, (letter as u32) % 32);
                    Ok(3)
                }
                _ => Err(invalid(r"\c must be followed by a letter".to_owned())),
            };
        }
        '0' if !chars.get(at + 1).is_some_and(char::is_ascii_digit) => out.push_str(r"\x00"),
        '1'..='9' => {
            return Err(invalid(format!(
                r"backreferences (\{next}) are not supported"
            )))
        }
        'k' if chars.get(at + 1) == Some(&'<') => {
            return Err(invalid(
                r"backreferences (\k<name>) are not supported".to_owned(),
            ))
        }
        // Escapes both dialects read alike; `regex` checks the digits or the property name. A
        // braced argument (`\u{E9}`, `\p{Lu}`) is copied whole so its braces are not quantifiers.
        'x' | 'u' | 'p' | 'P' => {
            out.push('\\');
            out.push(next);
            if chars.get(at + 1) == Some(&'{') {
                let Some(close) = chars[at + 1..].iter().position(|&c| c == '}') else {
                    return Err(invalid(format!(r"unclosed {{ after \{next}")));
                };
                out.extend(&chars[at + 1..=at + 1 + close]);
                return Ok(2 + close + 1);
            }
        }
        // Control and syntax escapes read alike in both dialects.
        't' | 'n' | 'r' | 'f' | 'v' | '\\' | '/' | '^' | '$' | '.' | '*' | '+' | '?' | '('
        | ')' | '[' | ']' | '{' | '}' | '|' | '-' => {
            out.push('\\');
            out.push(next);
        }
        other if other.is_ascii_alphanumeric() => {
            return Err(invalid(format!(r"\{other} is not an ECMA-262 escape")));
        }
        // ECMA identity escapes of other characters mean the character itself.
        other => push_literal(other, out),
    }
    Ok(2)
}

/// `\x{..}`: a code point as an escape, which means the character itself in any position.
fn push_code(out: &mut String, code: u32) {
    // Writing into a String cannot fail.
    let _ = write!(out, r"\x{{{code:X}}}");
}

fn push_literal(c: char, out: &mut String) {
    if c.is_ascii_punctuation() || c.is_whitespace() {
        push_code(out, c as u32);
    } else {
        out.push(c);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn matches(pattern: &str, text: &str) -> bool {
        Pattern::new(pattern).unwrap().is_match(text)
    }

    fn refusal(pattern: &str) -> String {
        match Pattern::new(pattern) {
            Err(CoreError::InvalidPattern { reason }) => reason,
            other => panic!("{pattern:?} was not refused: {other:?}"),
        }
    }

    #[test]
    fn search_is_unanchored_unless_anchored() {
        assert!(matches("b", "abc"));
        assert!(!matches("^b", "abc"));
        assert!(matches("^a.c$", "abc"));
        assert!(!matches("^a.c$", "abcd"));
        // `$` without the m flag is the end of the input, not of a line.
        assert!(!matches("^a$", "a\nb"));
    }

    #[test]
    fn ecma_classes_are_ascii() {
        assert!(matches(r"^\d+$", "2024"));
        assert!(!matches(r"^\d$", "\u{0663}")); // ARABIC-INDIC DIGIT THREE
        assert!(matches(r"^\w+$", "snake_case9"));
        assert!(!matches(r"^\w$", "é"));
        assert!(matches(r"^\W$", "é"));
        assert!(matches(r"\bcat\b", "a cat."));
        assert!(!matches(r"\bcat\b", "concatenate"));
        assert!(matches(r"^[\d-]+$", "12-34"));
        assert!(matches(r"^[^\d]$", "x"));
        assert!(!matches(r"^[^\d]$", "5"));
        assert!(matches(r"^\s$", "\u{FEFF}"));
        assert!(matches(r"^[\b]$", "\u{8}"));
    }

    #[test]
    fn dot_skips_line_terminators() {
        assert!(matches("^.$", "é"));
        assert!(!matches("^.$", "\n"));
        assert!(!matches("^.$", "\u{2028}"));
        assert!(matches("^[.]$", "."));
        assert!(!matches("^[.]$", "x"));
    }

    #[test]
    fn ecma_class_edge_cases() {
        assert!(!matches("[]", "anything"));
        assert!(matches("^[^]$", "\n"));
        // Literal in ECMA, set operators in the `regex` crate.
        assert!(matches("^[a&&b]+$", "a&b"));
        assert!(matches("^[~]$", "~"));
        assert!(matches(r"^[\[\]]+$", "[]"));
        assert!(matches("^[[]$", "["));
    }

    #[test]
    fn escapes() {
        assert!(matches(r"^\/\.\*$", "/.*"));
        assert!(matches(r"^\u00e9$", "é"));
        assert!(matches(r"^\x41$", "A"));
        assert!(matches(r"^\cJ$", "\n"));
        assert!(matches(r"^\0$", "\0"));
        assert!(matches(r"^\@$", "@"));
        assert!(matches(r"^\p{Lu}+$", "ÉA"));
        assert!(matches("^(?<year>[0-9]{4})-(?:0[1-9]|1[0-2])$", "2024-11"));
    }

    #[test]
    fn refused_features_say_why() {
        assert!(refusal(r"(a)\1").contains("backreferences"));
        assert!(refusal(r"(?<n>a)\k<n>").contains("backreferences"));
        assert!(refusal("a(?=b)").contains("lookahead"));
        assert!(refusal("(?<!a)b").contains("lookbehind"));
        assert!(refusal("(?i)abc").contains("inline flags"));
        assert!(refusal(r"\z").contains("not an ECMA-262 escape"));
        assert!(refusal("abc\\").contains("lone backslash"));
        assert!(refusal("[abc").contains("unclosed"));
        assert!(!refusal("(abc").is_empty());
        assert!(refusal("a**").contains("nothing to repeat"));
        assert!(refusal("a+?+").contains("nothing to repeat"));
        assert!(matches("^a+?b{1,2}?$", "aabb"));
        assert!(refusal(&"a".repeat(MAX_PATTERN_CHARS + 1)).contains("longer than 256"));
        assert!(Pattern::new(&"a".repeat(MAX_PATTERN_CHARS)).is_ok());
    }

    #[test]
    fn hostile_sizes_are_refused_not_built() {
        assert!(refusal("((a{100}){100}){100}").contains("compiles to more than"));
        assert!(refusal(r"(\p{L}{20}){20}").contains("compiles to more than"));
        let deep = format!("{}a{}", "(".repeat(40), ")".repeat(40));
        assert!(!refusal(&deep).is_empty());
    }

    #[test]
    fn catastrophic_backtracking_patterns_run_in_linear_time() {
        let text = format!("{}b", "a".repeat(50_000));
        for pattern in [
            "^(a+)+$",
            "^(a|a)*$",
            "^(a|aa)+$",
            "(x+x+)+y",
            "^(\\w+\\s?)*!$",
        ] {
            assert!(!matches(pattern, &text), "{pattern}");
        }
        assert!(matches("^(a+)+b$", &text));
    }

    #[test]
    fn batch_agrees_with_single() {
        let pattern = Pattern::new("^[a-c]+$").unwrap();
        let texts = ["abc", "abd", "", "cab"];
        let one: Vec<bool> = texts.iter().map(|t| pattern.is_match(t)).collect();
        assert_eq!(pattern.matches(&texts), one);
        assert_eq!(pattern.as_str(), "^[a-c]+$");
    }
}
