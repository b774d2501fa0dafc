//! A histogram through the real provider: three counter definitions (the sum as a
//! `PERF_AVERAGE_BULK` under the histogram's name, the count as its unnamed
//! `PERF_AVERAGE_BASE`, the unnamed variable-length `PERF_PRFDATA_HISTOGRAM` holding the
//! descriptor and the bucket counts), in every instance and `_Total`.

use prfdata_rules::histogram::{Descriptor, Geometry};
use prfdata_wire::winperf::{PERF_AVERAGE_BASE, PERF_AVERAGE_BULK, PERF_PRFDATA_HISTOGRAM};

use crate::common::{app_h, env, parse, serial, Obj, Provider, ERROR_SUCCESS};

/// The histogram of instance `inst` of `obj` (its three counters first): geometry, buckets,
/// base and sum, checked against the definitions.
fn histogram(obj: &Obj, inst: usize) -> (Geometry, Vec<u64>, u32, u64) {
    let block = &obj.instances[inst].2;
    let h = &obj.counters[2];
    let (at, size) = (
        h.counter_offset.get() as usize,
        h.counter_size.get() as usize,
    );
    let words: Vec<u64> = block[at..at + size]
        .chunks_exact(8)
        .map(|w| u64::from_le_bytes(w.try_into().unwrap()))
        .collect();
    let (g, d) = Descriptor::decode(&words).expect("the descriptor decodes, with the size");
    assert_eq!(size, 8 * (d + g.buckets()), "CounterSize = 8 × (D + n)");
    (
        g,
        words[d..].to_vec(),
        obj.value(inst, 1) as u32,
        obj.value(inst, 0) as u64,
    )
}

/// The definitions of a histogram: the sum named, the base and the buckets not.
fn check_definitions(obj: &Obj, name: u32, help: u32) {
    let types: Vec<u32> = obj.counters.iter().map(|c| c.counter_type.get()).collect();
    assert_eq!(
        types,
        [PERF_AVERAGE_BULK, PERF_AVERAGE_BASE, PERF_PRFDATA_HISTOGRAM]
    );
    let names: Vec<(u32, u32)> = obj
        .counters
        .iter()
        .map(|c| {
            (
                c.counter_name_title_index.get(),
                c.counter_help_title_index.get(),
            )
        })
        .collect();
    assert_eq!(names, [(name, help), (0, 0), (0, 0)]);
    let sizes: Vec<u32> = obj.counters[..2]
        .iter()
        .map(|c| c.counter_size.get())
        .collect();
    assert_eq!(sizes, [8, 4]);
}

#[test]
fn a_histogram_is_served_as_its_sum_its_count_and_its_buckets() {
    let _s = serial();
    let prf = app_h::PrfData::activate().unwrap();
    let latency = prf.histogram(app_h::LATENCY, ());
    let values = [0, 3, 10, 10, 250, 4000, 20_000_000];
    values.iter().for_each(|&v| latency.record(v));
    let worker = prf.add_instance(app_h::WORKER, "w1").unwrap();
    let size = prf.histogram(app_h::SIZE, worker);
    [7, 7000, 700_000].iter().for_each(|&v| size.record(v));
    let p = Provider::load();
    assert_eq!(p.open(&["ProvTestH"]), ERROR_SUCCESS);
    let (out, data) = p.collect("Global");
    let objs = parse(&data, out.objects);
    let (first, first_help) = env().first_h;
    let title = |o: usize| first + app_h::MAP.objects[o].offset;
    let object = |o: usize| {
        objs.iter()
            .find(|obj| obj.header.object_name_title_index.get() == title(o))
            .expect("the object")
    };
    let counter = |o: usize| app_h::MAP.objects[o].counters[0].offset.unwrap();
    let (service, workers) = (object(0), object(1));
    check_definitions(service, first + counter(0), first_help + counter(0));
    check_definitions(workers, first + counter(1), first_help + counter(1));
    let (g, buckets, base, sum) = histogram(service, 0);
    assert_eq!(&g, latency.geometry());
    let mut want = vec![0u64; g.buckets()];
    values.iter().for_each(|&v| want[g.index(v)] += 1);
    assert_eq!(buckets, want);
    assert_eq!((base, sum), (7, values.iter().sum::<u64>()));
    // The worker and `_Total` alike: (0, 64], (64, 1024], (1024, 65536], above.
    assert_eq!(workers.instances.len(), 2);
    for inst in 0..2 {
        let (g, buckets, base, sum) = histogram(workers, inst);
        assert_eq!(&g, size.geometry());
        assert_eq!(
            (buckets, base, sum),
            (vec![1, 0, 1, 1], 3, 707_007),
            "instance {inst}"
        );
    }
    assert_eq!(p.close(), ERROR_SUCCESS);
}
