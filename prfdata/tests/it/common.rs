//! Shared by the integration tests: a test map, and child processes made by re-executing the
//! test binary.
#![allow(dead_code)]

use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

prfdata::prfdata_map! {
    /// The map the integration tests publish.
    pub mod testmap {
        app: "PrfDataTest",
        object TOTALS = 0 {
            name: "Test Totals", help: "Process-wide test counters.",
            detail: Novice, default: HITS, instances: none, costly: false,
            counters {
                HITS = 2: LargeRawCount { name: "Hits", help: "Increments.", detail: Novice, scale: 0 },
                HITS32 = 4: RawCount { name: "Hits32", help: "32-bit increments.", detail: Novice, scale: 0 },
                UNGUARDED = 6: LargeRawCount { name: "Unguarded", help: "Updated only under lock_ctrs, non-atomically.", detail: Wizard, scale: 0 },
            }
        }
        object ITEMS = 8 {
            name: "Test Items", help: "Instances the tests add and remove.",
            detail: Advanced, default: ITEM_HITS, instances: { max: 64, name_len: 40 }, costly: false,
            counters {
                ITEM_HITS = 10: LargeRawCount { name: "Item hits", help: "Per-item increments.", detail: Novice, scale: 0 },
                ITEM_TAG = 12: RawCount { name: "Item tag", help: "A value tied to the name.", detail: Novice, scale: 0 },
            }
        }
        object PARTS = 14 {
            name: "Test Parts", help: "Children of items.",
            detail: Expert, default: none, instances: { max: 16, name_len: 8 }, costly: true,
            counters {
                PART_SIZE = 16: RawCount { name: "Part size", help: "A size.", detail: Expert, scale: -1 },
            }
        }
    }
}

/// The environment variable that selects a child's role.
pub const ROLE: &str = "PRFDATA_TEST_ROLE";

/// A child process that is killed and waited for when dropped (a test that fails leaves none
/// behind); one that already ended is left alone.
#[derive(Debug)]
pub struct ChildProcess(Child);

impl ChildProcess {
    /// Takes charge of `child`.
    pub fn new(child: Child) -> Self {
        Self(child)
    }
}

impl std::ops::Deref for ChildProcess {
    type Target = Child;

    fn deref(&self) -> &Child {
        &self.0
    }
}

impl std::ops::DerefMut for ChildProcess {
    fn deref_mut(&mut self) -> &mut Child {
        &mut self.0
    }
}

impl std::borrow::Borrow<Child> for ChildProcess {
    fn borrow(&self) -> &Child {
        &self.0
    }
}

impl std::borrow::BorrowMut<Child> for ChildProcess {
    fn borrow_mut(&mut self) -> &mut Child {
        &mut self.0
    }
}

impl Drop for ChildProcess {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// Starts this test binary again running only `entry` (an ignored test), with `role` and extra
/// environment.
pub fn spawn_child(entry: &str, role: &str, dir: &Path, env: &[(&str, String)]) -> ChildProcess {
    let exe = std::env::current_exe().expect("the test binary knows its path");
    let mut cmd = Command::new(exe);
    cmd.args([
        "--exact",
        entry,
        "--include-ignored",
        "--nocapture",
        "--test-threads=1",
    ])
    .env(ROLE, role)
    .env("PRFDATA_SHM_DIR", dir)
    .stdin(Stdio::null())
    .stdout(Stdio::null())
    .stderr(Stdio::inherit());
    for (k, v) in env {
        cmd.env(k, v);
    }
    ChildProcess(cmd.spawn().expect("spawn child test process"))
}

/// A worker child that reports its progress: this test binary again running only `entry`
/// with `role` and `env`, its stdin a pipe (the worker reads `go` lines from it), each `done
/// N` line it prints sent on `events` as `(slot, N)`.
pub fn spawn_reporting(
    entry: &str,
    role: &str,
    dir: &Path,
    env: &[(&str, String)],
    (slot, events): (usize, std::sync::mpsc::Sender<(usize, i64)>),
) -> (Child, std::process::ChildStdin) {
    use std::io::BufRead;
    let mut cmd = Command::new(std::env::current_exe().unwrap());
    cmd.args([
        "--exact",
        entry,
        "--include-ignored",
        "--nocapture",
        "--test-threads=1",
    ])
    .env(ROLE, role)
    .env("PRFDATA_SHM_DIR", dir)
    .stdin(Stdio::piped())
    .stdout(Stdio::piped())
    .stderr(Stdio::inherit());
    for (k, v) in env {
        cmd.env(k, v);
    }
    let mut child = cmd.spawn().expect("spawn a worker");
    let stdin = child.stdin.take().unwrap();
    let stdout = child.stdout.take().unwrap();
    std::thread::spawn(move || {
        for line in std::io::BufReader::new(stdout).lines() {
            let Ok(line) = line else { break };
            // libtest's "test <entry> ... " may open the first line.
            if let Some(n) = line.split_once("done ").map(|(_, n)| n) {
                if events.send((slot, n.parse().unwrap())).is_err() {
                    break;
                }
            }
        }
    });
    (child, stdin)
}

/// Runs `f` on a new thread and waits for it at most `limit`: a call that blocks fails the test
/// (naming `what`) instead of hanging it.
pub fn bounded<T: Send + 'static>(
    limit: Duration,
    what: &str,
    f: impl FnOnce() -> T + Send + 'static,
) -> T {
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let _ = tx.send(f());
    });
    rx.recv_timeout(limit)
        .unwrap_or_else(|_| panic!("{what} did not return within {limit:?}"))
}

/// Waits for a child for at most `limit`, killing it (and failing) if it takes longer.
pub fn wait_ok(mut child: impl std::borrow::BorrowMut<Child>, limit: Duration) {
    let child = child.borrow_mut();
    let start = Instant::now();
    loop {
        match child.try_wait().expect("wait for child") {
            Some(status) => {
                assert!(status.success(), "child failed: {status}");
                return;
            }
            None if start.elapsed() > limit => {
                let _ = child.kill();
                let _ = child.wait();
                panic!("child did not finish within {limit:?}");
            }
            None => std::thread::sleep(Duration::from_millis(5)),
        }
    }
}

/// Polls `cond` every millisecond until it holds or `limit` passes.
pub fn wait_until(limit: Duration, mut cond: impl FnMut() -> bool) -> bool {
    let start = Instant::now();
    while start.elapsed() < limit {
        if cond() {
            return true;
        }
        std::thread::sleep(Duration::from_millis(1));
    }
    cond()
}

/// The role this process was started for, if it is a child.
pub fn role() -> Option<String> {
    std::env::var(ROLE).ok()
}

/// The shm dir a child was given.
pub fn child_dir() -> std::path::PathBuf {
    std::env::var_os("PRFDATA_SHM_DIR")
        .expect("child has PRFDATA_SHM_DIR")
        .into()
}

/// A consistent copy of a whole block, made through the reader's one read path
/// ([`BlockReader::read_with`](prfdata::reader::BlockReader::read_with)): what the tests compare
/// against what they wrote.
pub mod snapshot {
    use prfdata::reader::{BlockReader, ParentLink, ReadError};

    /// One instance of a [`Snapshot`].
    #[derive(Clone, Debug, PartialEq, Eq)]
    pub struct InstanceSnapshot {
        /// Its slot.
        pub slot: u32,
        /// The slot's generation.
        pub generation: u32,
        /// Unique id or -1.
        pub unique_id: Option<i32>,
        /// Its parent, if it has one.
        pub parent: Option<ParentLink>,
        /// Its count of live children, as the writer keeps it.
        pub children: u32,
        name: Vec<u16>,
        data: Vec<u8>,
    }

    /// One object of a [`Snapshot`].
    #[derive(Clone, Debug, Default, PartialEq, Eq)]
    pub struct ObjectSnapshot {
        /// The live instances, in live-list order (empty without instances).
        pub instances: Vec<InstanceSnapshot>,
        global: Vec<u8>,
    }

    /// Every object's instances and counter blocks, from one consistent window.
    #[derive(Clone, Debug, Default)]
    pub struct Snapshot {
        /// One entry per object of the block.
        pub objects: Vec<ObjectSnapshot>,
    }

    impl Snapshot {
        /// An instance's name, UTF-16 without the NUL.
        pub fn name<'a>(&self, inst: &'a InstanceSnapshot) -> &'a [u16] {
            &inst.name
        }

        /// An instance's counter block, ByteLength first.
        pub fn instance_block<'a>(&self, inst: &'a InstanceSnapshot) -> &'a [u8] {
            &inst.data
        }

        /// The counter block of an object without instances.
        pub fn global_block<'a>(&self, obj: &'a ObjectSnapshot) -> &'a [u8] {
            &obj.global
        }
    }

    /// `reader.read(&mut snap)`: a [`Snapshot`] through `read_with`.
    pub trait ReadAll {
        /// Fills `snap` from one consistent window (cleared on error).
        fn read(&self, snap: &mut Snapshot) -> Result<(), ReadError>;
    }

    impl ReadAll for BlockReader {
        fn read(&self, snap: &mut Snapshot) -> Result<(), ReadError> {
            let copied = self.read_with(BlockReader::DEFAULT_READ_DEADLINE, |view| {
                let mut objects = Vec::new();
                for (k, info) in self.objects().iter().enumerate() {
                    let stride = info.counter_block_size as usize;
                    let mut out = ObjectSnapshot::default();
                    if !info.instanced {
                        out.global = vec![0; stride];
                        view.copy_global_block(k, &mut out.global)?;
                        info.fixups().apply(&mut out.global);
                        objects.push(out);
                        continue;
                    }
                    let table = view.instances(k)?;
                    for pos in 0..table.len() {
                        let inst = table.get(pos)?;
                        let mut name = Vec::new();
                        table.name_units(&inst, &mut name)?;
                        let mut data = vec![0; stride];
                        table.copy_counter_block(&inst, &mut data)?;
                        info.fixups().apply(&mut data);
                        out.instances.push(InstanceSnapshot {
                            slot: inst.slot,
                            generation: inst.generation,
                            unique_id: inst.unique_id,
                            parent: inst.parent,
                            children: table.children(pos)?,
                            name,
                            data,
                        });
                    }
                    objects.push(out);
                }
                Ok(objects)
            });
            match copied {
                Ok(objects) => {
                    snap.objects = objects;
                    Ok(())
                }
                Err(e) => {
                    snap.objects.clear();
                    Err(e)
                }
            }
        }
    }

    /// The value of `size` bytes at `offset` of a counter block, sign-extended from 32 bits.
    pub fn counter_value(block: &[u8], offset: u32, size: u32) -> Option<i64> {
        let at = usize::try_from(offset).ok()?;
        match size {
            4 => Some(i64::from(i32::from_le_bytes(
                block.get(at..at.checked_add(4)?)?.try_into().ok()?,
            ))),
            8 => Some(i64::from_le_bytes(
                block.get(at..at.checked_add(8)?)?.try_into().ok()?,
            )),
            _ => None,
        }
    }
}
