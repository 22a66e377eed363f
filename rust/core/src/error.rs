//! The one error type of `brainstore-core`.
//!
//! Every fallible kernel returns [`CoreError`]. The variants describe caller mistakes (inputs
//! of mismatched lengths, out-of-range arguments, refused patterns); the kernels have no I/O and no internal
//! failure modes. `rust/py` maps each variant to a Python exception in one function.

/// A caller error detected by a kernel.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum CoreError {
    /// Two parallel input slices differ in length.
    #[error("{left_name} has {left} items but {right_name} has {right}")]
    LengthMismatch {
        left_name: &'static str,
        left: usize,
        right_name: &'static str,
        right: usize,
    },
    /// A token count below zero, at `index` of the input.
    #[error("token_counts[{index}] is negative ({value})")]
    NegativeTokenCount { index: usize, value: i64 },
    /// An argument outside its documented domain.
    #[error("invalid {name}: {reason}")]
    InvalidArgument {
        name: &'static str,
        reason: &'static str,
    },
    /// A `pattern` the linear-time engine refuses: too long, too large once compiled, or using
    /// a feature it lacks (backreferences, lookaround). `reason` says which, for the caller.
    #[error("invalid pattern: {reason}")]
    InvalidPattern { reason: String },
}

/// Checks that two parallel slices have the same length.
pub(crate) fn same_len(
    left_name: &'static str,
    left: usize,
    right_name: &'static str,
    right: usize,
) -> Result<(), CoreError> {
    if left == right {
        Ok(())
    } else {
        Err(CoreError::LengthMismatch {
            left_name,
            left,
            right_name,
            right,
        })
    }
}
