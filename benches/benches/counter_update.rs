//! Counter update cost (filled in by the benchmarks issue).
use criterion::{criterion_group, criterion_main, Criterion};
use std::sync::atomic::{AtomicU64, Ordering};

fn counter_update(c: &mut Criterion) {
    let mut group = c.benchmark_group("counter_update");
    let floor = Box::new(AtomicU64::new(0));
    group.bench_function("raw_atomic_u64", |b| {
        b.iter(|| floor.fetch_add(1, Ordering::Relaxed))
    });
    group.finish();
}

criterion_group!(benches, counter_update);
criterion_main!(benches);
