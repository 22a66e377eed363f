//! State shared between threads behind one read-write lock, as the indexes keep it.

use std::sync::{PoisonError, RwLock, RwLockReadGuard, RwLockWriteGuard};

/// A `RwLock` that recovers from poisoning. A panic while holding the lock cannot leave the
/// state it guards unsafe to read (the kernels are safe Rust), and recovering keeps one bad call
/// from disabling an index for the rest of the process.
#[derive(Default)]
pub(crate) struct Shared<T> {
    lock: RwLock<T>,
}

impl<T> Shared<T> {
    pub(crate) fn read(&self) -> RwLockReadGuard<'_, T> {
        self.lock.read().unwrap_or_else(PoisonError::into_inner)
    }

    pub(crate) fn write(&self) -> RwLockWriteGuard<'_, T> {
        self.lock.write().unwrap_or_else(PoisonError::into_inner)
    }
}
