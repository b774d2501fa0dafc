//! Group `instances`: adding and removing an instance, with few and with many live.
//!
//! | id                   | one iteration                                                    |
//! |----------------------|------------------------------------------------------------------|
//! | `add_remove_at_10`   | `add_instance` then `remove_instance`, 10 instances live          |
//! | `add_remove_at_100k` | the same with 100,000 instances live                              |
//!
//! Both run on the same block (an object with room for 100,016 instances), so the only
//! difference between them is the number of live instances: an add or a remove must not cost
//! more when there are many (the free list and the live list are O(1) to update).
use std::path::PathBuf;
use std::time::Duration;

use criterion::{criterion_group, criterion_main, Criterion};

prfdata::prfdata_map! {
    /// One object with room for 100,000 instances and a few more.
    pub mod bench_map {
        app: "PrfDataBenchInstances",
        object CONNECTION = 0 {
            name: "Bench Connection", help: "A connection of the instances benchmark.",
            detail: Novice, default: BYTES, instances: { max: 100_016, name_len: 16 },
            costly: false,
            counters {
                BYTES = 2: LargeRawCount { name: "Bytes", help: "b", detail: Novice, scale: 0 },
                REQUESTS = 4: CounterCounter { name: "Requests/sec", help: "r", detail: Novice, scale: 0 },
            }
        }
    }
}

fn shm_dir() -> PathBuf {
    let dir = std::env::temp_dir().join(format!("prfdata-bench-instances-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("create the benchmark's shm folder");
    dir
}

/// Adds instances named `conn N` until `live` are live.
fn fill(prf: &bench_map::PrfData, live: usize) {
    for i in prf
        .instances()
        .list(bench_map::CONNECTION)
        .expect("list the connections")
        .len()..live
    {
        prf.add_instance(bench_map::CONNECTION, &format!("conn {i}"))
            .expect("room for the instance");
    }
}

fn instances(c: &mut Criterion) {
    let dir = shm_dir();
    let prf = bench_map::PrfData::activate_in(&dir).expect("activate the benchmark block");

    let mut group = c.benchmark_group("instances");
    group
        .warm_up_time(Duration::from_millis(500))
        .measurement_time(Duration::from_secs(2));
    let add_remove = |prf: &bench_map::PrfData| {
        let inst = prf
            .add_instance(bench_map::CONNECTION, "bench")
            .expect("room for one more");
        prf.remove_instance(inst).expect("the instance just added");
    };
    fill(&prf, 10);
    group.bench_function("add_remove_at_10", |b| b.iter(|| add_remove(&prf)));
    fill(&prf, 100_000);
    group.bench_function("add_remove_at_100k", |b| b.iter(|| add_remove(&prf)));
    group.finish();
    assert_eq!(
        prf.instances()
            .list(bench_map::CONNECTION)
            .expect("list the connections")
            .len(),
        100_000
    );

    drop(prf);
    let _ = std::fs::remove_dir_all(&dir);
}

criterion_group!(benches, instances);
criterion_main!(benches);
