//! TEMPORARY STUB (replaced by the optex branch).
#![allow(missing_docs)]
use crate::process::ProcessId;
use std::sync::atomic::{AtomicU32, AtomicU64, Ordering};
use std::time::{Duration, Instant};
#[repr(C, align(64))]
pub struct Optex {
    word: AtomicU32,
    _p: u32,
    start: AtomicU64,
    _pad: [u64; 6],
}
pub struct OptexGuard<'a> {
    o: &'a Optex,
    died: bool,
}
impl Default for Optex {
    fn default() -> Self {
        Self::new()
    }
}

impl Optex {
    pub const fn new() -> Optex {
        Optex {
            word: AtomicU32::new(0),
            _p: 0,
            start: AtomicU64::new(0),
            _pad: [0; 6],
        }
    }
    fn try_once(&self) -> Option<OptexGuard<'_>> {
        let me = ProcessId::current();
        match self
            .word
            .compare_exchange(0, me.pid, Ordering::Acquire, Ordering::Relaxed)
        {
            Ok(_) => {
                self.start.store(me.start_time, Ordering::Relaxed);
                Some(OptexGuard {
                    o: self,
                    died: false,
                })
            }
            Err(owner) => {
                let st = self.start.load(Ordering::Relaxed);
                if (ProcessId {
                    pid: owner,
                    start_time: st,
                })
                .liveness()
                    == crate::process::Liveness::Dead
                    && self
                        .word
                        .compare_exchange(owner, me.pid, Ordering::Acquire, Ordering::Relaxed)
                        .is_ok()
                {
                    self.start.store(me.start_time, Ordering::Relaxed);
                    return Some(OptexGuard {
                        o: self,
                        died: true,
                    });
                }
                None
            }
        }
    }
    pub fn lock(&self) -> OptexGuard<'_> {
        loop {
            if let Some(g) = self.try_once() {
                return g;
            }
            std::thread::yield_now();
        }
    }
    pub fn try_lock(&self) -> Option<OptexGuard<'_>> {
        self.try_once()
    }
    pub fn try_lock_for(&self, t: Duration) -> Option<OptexGuard<'_>> {
        let end = Instant::now() + t;
        loop {
            if let Some(g) = self.try_once() {
                return Some(g);
            }
            if Instant::now() > end {
                return None;
            }
            std::thread::yield_now();
        }
    }
    pub fn is_locked(&self) -> bool {
        self.word.load(Ordering::Relaxed) != 0
    }
}
impl OptexGuard<'_> {
    pub fn owner_died(&self) -> bool {
        self.died
    }
}
impl Drop for OptexGuard<'_> {
    fn drop(&mut self) {
        self.o.word.store(0, Ordering::Release);
    }
}
