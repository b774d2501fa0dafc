//! Group `sampler`: what a path waiting for an app that is not installed yet costs a sampler
//! (`prfmon watch`, `prfmon typeperf`'s watch leases) at every sample, over a collection of
//! one object with 10,000 instances.
//!
//! | id                 | one iteration                                                           |
//! |--------------------|-------------------------------------------------------------------------|
//! | `present_10k`      | `Sampler::sample_with` of `\Bench Pool(conn 5000)\Value` (a baseline)     |
//! | `waiting_10k`      | `Sampler::sample_with` of that path and `\Not Installed\Value`            |
//! | `near_matches_10k` | what every sample paid for the waiting path before the sampler kept it: `sampler::unmatched` of `\Not Installed\Value` (matched, then near matches over the 10,000 instances) |
//!
//! `waiting_10k` minus `present_10k` is the waiting path's cost per sample now.
use std::hint::black_box;
use std::time::Duration;

use criterion::{criterion_group, criterion_main, Criterion};
use prfdata_wire::build::ObjectBuilder;
use prfdata_wire::snapshot::{DataSnapshot, InstanceData, RawValue};
use prfdata_wire::winperf::{PERF_COUNTER_RAWCOUNT, PERF_NO_UNIQUE_ID};
use prfmon::datablock::{build_data_block, CollectionTimes, ProviderOutput};
use prfmon::names::Names;
use prfmon::pdh::{parse, FormatOptions};
use prfmon::sampler::Sampler;

/// Instances of the benchmark's object.
const INSTANCES: usize = 10_000;

/// One object (`Bench Pool`, index 1848) with [`INSTANCES`] instances `conn N`, one RAWCOUNT
/// counter (`Value`, 1850), and its names.
fn collection() -> (DataSnapshot, Names) {
    let mut object = ObjectBuilder::new(1848).counter(1850, PERF_COUNTER_RAWCOUNT, 4);
    for i in 0..INSTANCES {
        object = object.instance(InstanceData {
            name: format!("conn {i}"),
            unique_id: PERF_NO_UNIQUE_ID,
            values: vec![RawValue::Int(i as i64)],
            ..InstanceData::default()
        });
    }
    let bytes = build_data_block(
        "bench",
        &CollectionTimes::now(),
        &[ProviderOutput::from(&object)],
    );
    let snapshot = prfdata_wire::snapshot::decode(&bytes).expect("the benchmark's collection");
    let mut names = Names::default();
    names.counter.insert(1848, "Bench Pool".into());
    names.counter.insert(1850, "Value".into());
    (snapshot, names)
}

fn sampler(c: &mut Criterion) {
    let (snapshot, names) = collection();
    let present = parse(r"\Bench Pool(conn 5000)\Value").expect("a path");
    let waiting = parse(r"\Not Installed\Value").expect("a path");

    let mut group = c.benchmark_group("sampler");
    group
        .warm_up_time(Duration::from_millis(500))
        .measurement_time(Duration::from_secs(2));
    for (id, requests) in [
        ("present_10k", vec![present.clone()]),
        ("waiting_10k", vec![present.clone(), waiting.clone()]),
    ] {
        let mut sampler = Sampler::new(requests, FormatOptions::default());
        group.bench_function(id, |b| {
            b.iter(|| {
                let mut count = 0;
                let s = sampler.sample_with(&snapshot, &names, |_| count += 1);
                black_box((count, s.unmatched.len()))
            })
        });
    }
    let requests = [waiting];
    group.bench_function("near_matches_10k", |b| {
        b.iter(|| black_box(prfmon::sampler::unmatched(&requests, &snapshot, &names)))
    });
    group.finish();
}

criterion_group!(benches, sampler);
criterion_main!(benches);
