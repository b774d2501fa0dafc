//! TEMPORARY STUB (replaced by the optex branch).
#![allow(missing_docs)]
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct ProcessId {
    pub pid: u32,
    pub start_time: u64,
}
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Liveness {
    Alive,
    Dead,
}
impl ProcessId {
    pub fn current() -> ProcessId {
        Self::of(std::process::id()).unwrap()
    }
    pub fn of(pid: u32) -> Option<ProcessId> {
        let s = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
        let rest = &s[s.rfind(')')? + 2..];
        let f: Vec<&str> = rest.split(' ').collect();
        if f[0] == "Z" {
            return None;
        }
        Some(ProcessId {
            pid,
            start_time: f[19].parse().ok()?,
        })
    }
    pub fn liveness(&self) -> Liveness {
        match Self::of(self.pid) {
            Some(p) if p.start_time == self.start_time => Liveness::Alive,
            _ => Liveness::Dead,
        }
    }
}
