//! Watermarks: opaque tokens that name a position in one Brain's change sequence.
//!
//! Binary layout (29 bytes), then base64url without padding, prefixed with `wm_`:
//!
//! ```text
//! offset  size  field
//!      0     1  version (currently 1)
//!      1     8  seq, u64 big-endian
//!      9     8  first 8 bytes of SHA-256(brain_key)
//!     17    12  first 12 bytes of HMAC-SHA256(secret, bytes 0..17)
//! ```
//!
//! Invariants:
//! - `decode(secret, key, &encode(secret, key, seq)?) == Some(seq)` for every seq.
//! - `decode` never panics and returns `None` for any other input: garbage, a wrong prefix,
//!   non-canonical base64 (so altering any character is detected), a wrong length, an unknown
//!   version, another Brain's key, another secret, or a tampered tag.
//! - The tag is checked in constant time (`hmac`'s `verify_truncated_left`), and the brain-key
//!   hash is covered by the tag, so it cannot be swapped independently.
//! - Encoding refuses an empty secret: a watermark signed with nothing would be forgeable.

use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use base64::Engine as _;
use hmac::{Hmac, KeyInit, Mac as _};
use sha2::{Digest as _, Sha256};

use crate::error::CoreError;

/// The prefix of every watermark token.
pub const PREFIX: &str = "wm_";
/// The layout version this build writes and accepts.
pub const VERSION: u8 = 1;

const KEY_HASH_LEN: usize = 8;
const TAG_LEN: usize = 12;
const SIGNED_LEN: usize = 1 + 8 + KEY_HASH_LEN;
const TOKEN_LEN: usize = SIGNED_LEN + TAG_LEN;

type HmacSha256 = Hmac<Sha256>;

fn key_hash(brain_key: &str) -> [u8; KEY_HASH_LEN] {
    let digest = Sha256::digest(brain_key.as_bytes());
    let mut out = [0u8; KEY_HASH_LEN];
    out.copy_from_slice(&digest[..KEY_HASH_LEN]);
    out
}

fn mac(secret: &[u8], signed: &[u8]) -> HmacSha256 {
    // HMAC accepts keys of any length, so this cannot fail.
    let mut mac = <HmacSha256 as KeyInit>::new_from_slice(secret)
        .unwrap_or_else(|_| unreachable!("HMAC takes keys of any length"));
    mac.update(signed);
    mac
}

/// Encodes `seq` for `brain_key`, signed with `secret`.
///
/// # Errors
/// [`CoreError::InvalidArgument`] when `secret` is empty.
pub fn encode(secret: &[u8], brain_key: &str, seq: u64) -> Result<String, CoreError> {
    if secret.is_empty() {
        return Err(CoreError::InvalidArgument {
            name: "secret",
            reason: "must not be empty",
        });
    }
    let mut buf = [0u8; TOKEN_LEN];
    buf[0] = VERSION;
    buf[1..9].copy_from_slice(&seq.to_be_bytes());
    buf[9..SIGNED_LEN].copy_from_slice(&key_hash(brain_key));
    let tag = mac(secret, &buf[..SIGNED_LEN]).finalize().into_bytes();
    buf[SIGNED_LEN..].copy_from_slice(&tag[..TAG_LEN]);
    let mut out = String::with_capacity(PREFIX.len() + 40);
    out.push_str(PREFIX);
    URL_SAFE_NO_PAD.encode_string(buf, &mut out);
    Ok(out)
}

/// Returns the sequence number in `token`, or `None` when it is not a valid watermark of
/// `brain_key` signed with `secret` (see the module docs).
pub fn decode(secret: &[u8], brain_key: &str, token: &str) -> Option<u64> {
    if secret.is_empty() {
        return None;
    }
    let body = token.strip_prefix(PREFIX)?;
    // Longer inputs cannot be a token; refusing them early bounds the work on hostile input.
    if body.len() > 64 {
        return None;
    }
    let bytes = URL_SAFE_NO_PAD.decode(body).ok()?;
    if bytes.len() != TOKEN_LEN || bytes[0] != VERSION {
        return None;
    }
    if bytes[9..SIGNED_LEN] != key_hash(brain_key) {
        return None;
    }
    mac(secret, &bytes[..SIGNED_LEN])
        .verify_truncated_left(&bytes[SIGNED_LEN..])
        .ok()?;
    let mut seq = [0u8; 8];
    seq.copy_from_slice(&bytes[1..9]);
    Some(u64::from_be_bytes(seq))
}

#[cfg(test)]
mod tests {
    use super::*;

    const SECRET: &[u8] = b"server secret";

    #[test]
    fn round_trip_and_shape() {
        for seq in [0, 1, 42, u64::MAX] {
            let token = encode(SECRET, "brain-a", seq).unwrap();
            assert!(token.starts_with("wm_"));
            assert_eq!(token.len(), 3 + 39);
            assert!(token[3..]
                .bytes()
                .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_'));
            assert_eq!(decode(SECRET, "brain-a", &token), Some(seq));
        }
    }

    #[test]
    fn rejects_foreign_and_garbage() {
        let token = encode(SECRET, "brain-a", 7).unwrap();
        assert_eq!(decode(SECRET, "brain-b", &token), None);
        assert_eq!(decode(b"other secret", "brain-a", &token), None);
        assert_eq!(decode(b"", "brain-a", &token), None);
        for junk in [
            "",
            "wm_",
            "wm_!!!",
            "xx_abc",
            &token[1..],
            &format!("{token}A"),
        ] {
            assert_eq!(decode(SECRET, "brain-a", junk), None, "{junk}");
        }
        assert!(encode(b"", "brain-a", 1).is_err());
    }

    #[test]
    fn rejects_unknown_version_even_if_signed() {
        let mut buf = [0u8; TOKEN_LEN];
        buf[0] = 2;
        buf[9..SIGNED_LEN].copy_from_slice(&key_hash("b"));
        let tag = mac(SECRET, &buf[..SIGNED_LEN]).finalize().into_bytes();
        buf[SIGNED_LEN..].copy_from_slice(&tag[..TAG_LEN]);
        let token = format!("wm_{}", URL_SAFE_NO_PAD.encode(buf));
        assert_eq!(decode(SECRET, "b", &token), None);
    }
}
