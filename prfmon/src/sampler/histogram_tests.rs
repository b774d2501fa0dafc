//! Percentile paths (`Name:pQ`) through the sampler and a log's columns, over objects built
//! with histograms as prfdata publishes them ([`prfdata_testkit::sample::histogram_object`]).

use super::tests::{collection_of, values};
use super::*;
use crate::histogram::NoData;
use prfdata_rules::histogram::DescriptorError;
use prfdata_testkit::sample::histogram_object;

/// The latency buckets 8..=9 and 10..=11 us (4 and 5) with `a` and `b` values.
fn latency(a: u64, b: u64) -> [u64; 15] {
    let mut counts = [0; 15];
    counts[4] = a;
    counts[5] = b;
    counts
}

/// A collection `seconds` in, of object "Hist" with `instances` (name, latency and size
/// counts).
fn collection(seconds: i64, instances: &[(&str, &[u64], &[u64])]) -> DataSnapshot {
    collection_of(seconds, histogram_object(3000, instances))
}

/// "Hist" with histograms "Latency" and "Sizes", and a plain counter named `plain`.
fn names(plain: &str) -> Names {
    let mut n = Names::default();
    for (i, s) in [
        (3000, "Hist"),
        (3002, "Latency"),
        (3004, "Sizes"),
        (3006, plain),
    ] {
        n.counter.insert(i, s.into());
    }
    n
}

fn sampler(paths: &[&str]) -> Sampler {
    let requests = paths.iter().map(|p| pdh::parse(p).unwrap()).collect();
    Sampler::new(requests, FormatOptions::default())
}

#[test]
fn a_percentile_is_read_from_the_bucket_counts_of_two_collections() {
    let names = names("Position");
    let mut s = sampler(&[
        r"\Hist(*)\Latency:p50",
        r"\Hist(a)\Latency:p99",
        r"\Hist(a)\Sizes:p90",
    ]);
    let zero = [0, 0, 0];
    let first = s.sample(
        &collection(
            1,
            &[("a", &latency(7, 0), &zero), ("b", &latency(0, 0), &zero)],
        ),
        &names,
    );
    let first_sample = ValueError::NoValue(NoValue::FirstSample {
        counter_type: PERF_PRFDATA_HISTOGRAM,
    });
    assert_eq!(
        values(&first),
        [
            (r"\Hist(a)\Latency:p50".to_owned(), Err(first_sample)),
            (r"\Hist(b)\Latency:p50".to_owned(), Err(first_sample)),
            (r"\Hist(a)\Latency:p99".to_owned(), Err(first_sample)),
            (r"\Hist(a)\Sizes:p90".to_owned(), Err(first_sample)),
        ]
    );
    // a: 50 values of 8..=9 and 50 of 10..=11 in the interval (7 were there before); b: none.
    let second = s.sample(
        &collection(
            2,
            &[
                ("a", &latency(57, 50), &[90, 10, 0]),
                ("b", &latency(0, 0), &zero),
            ],
        ),
        &names,
    );
    let none = ValueError::NoValue(NoValue::BaseNotAdvanced { delta: 0 });
    assert_eq!(
        values(&second),
        [
            (r"\Hist(a)\Latency:p50".to_owned(), Ok(8.5)),
            (r"\Hist(b)\Latency:p50".to_owned(), Err(none)),
            (r"\Hist(a)\Latency:p99".to_owned(), Ok(10.5)),
            (r"\Hist(a)\Sizes:p90".to_owned(), Ok(5.0)),
        ]
    );
    let reading = &second.readings[0];
    assert_eq!(
        (reading.name_index, reading.counter_type),
        (3002, PERF_PRFDATA_HISTOGRAM)
    );
    // Counts that went back: the app restarted.
    let third = s.sample(&collection(3, &[("a", &latency(1, 0), &zero)]), &names);
    let back = ValueError::NoValue(NoValue::CounterWentBack { delta: -56 });
    assert_eq!(third.readings[0].value, Err(back));
}

#[test]
fn an_exact_counter_name_with_a_colon_wins_over_the_percentile() {
    let names = names("Latency:p99");
    let mut s = sampler(&[r"\Hist(b)\Latency:p99", r"\Hist(b)\Latency:p90"]);
    let zero = [0, 0, 0];
    let snap = collection(
        1,
        &[("a", &latency(0, 0), &zero), ("b", &latency(0, 0), &zero)],
    );
    let sample = s.sample(&snap, &names);
    // The plain counter holds the instance's position: 1 for b.
    assert_eq!(sample.readings[0].value, Ok(1.0));
    assert_eq!(
        sample.readings[0].counter_type,
        prfdata_wire::winperf::PERF_COUNTER_RAWCOUNT
    );
    assert!(matches!(
        sample.readings[1].value,
        Err(ValueError::NoValue(NoValue::FirstSample { .. }))
    ));
}

#[test]
fn a_percentile_of_what_is_no_histogram_or_no_percentile_is_a_clear_error() {
    let names = names("Position");
    let snap = collection(1, &[("a", &latency(0, 0), &[0, 0, 0])]);
    let requests = |p: &str| [pdh::parse(p).unwrap()];
    let err = check(&requests(r"\Hist(a)\Position:p99"), &snap, &names).unwrap_err();
    assert_eq!(
        err,
        PathError::NotAHistogram {
            path: r"\Hist(a)\Position:p99".into(),
            counter: "Position".into()
        }
    );
    assert_eq!(
        err.to_string(),
        r"counter path `\Hist(a)\Position:p99`: `Position` is not a histogram; a percentile (`:p99`) is read only from a histogram's buckets"
    );
    let err = check(&requests(r"\Hist(a)\Latency:p101"), &snap, &names).unwrap_err();
    assert!(
        matches!(
            &err,
            PathError::BadPercentile {
                error: pdh::PercentileError::Range { .. },
                ..
            }
        ),
        "{err}"
    );
    assert!(err.to_string().contains("outside 0 < Q <= 100"), "{err}");
    // A name that is nothing on offer is the usual no match; so is `*` with a percentile.
    let err = check(&requests(r"\Hist(a)\Nothing:p99"), &snap, &names).unwrap_err();
    assert!(matches!(err, PathError::NoMatch { .. }), "{err}");
    let paths = resolve(&requests(r"\Hist(*)\*"), &snap, &names).unwrap();
    let paths: Vec<String> = paths.iter().map(|p| p.to_string()).collect();
    // The counters on offer: no bucket counter, no percentile; bases serve their averages.
    assert_eq!(
        paths,
        [
            r"\\box\Hist(a)\Position",
            r"\\box\Hist(a)\Latency",
            r"\\box\Hist(a)\Sizes"
        ]
    );
}

#[test]
fn a_histogram_that_does_not_decode_has_no_value_with_its_reason() {
    let names = names("Position");
    let good = histogram_object(3000, &[("a", &latency(1, 1), &[0, 0, 0])]);
    let mut s = sampler(&[r"\Hist(a)\Latency:p50"]);
    s.sample(&collection_of(1, good.clone()), &names);
    // The descriptor's magic zeroed, as a reader marks a copy whose count overflowed.
    let magic = 0x4748u16.to_le_bytes();
    let at = good.windows(2).position(|w| w == magic).unwrap();
    let mut bad = good;
    bad[at..at + 2].fill(0);
    let sample = s.sample(&collection_of(2, bad), &names);
    let reason = ValueError::NoHistogram(NoData::Descriptor(DescriptorError::Magic(0)));
    assert_eq!(sample.readings[0].value, Err(reason));
    assert!(reason.to_string().contains("magic 0x0000"), "{reason}");
}

#[test]
fn a_log_column_of_a_percentile_is_headed_by_its_path_and_waits_like_any_other() {
    let names = names("Position");
    let zero = [0, 0, 0];
    let first = collection(1, &[("a", &latency(0, 0), &zero)]);
    let requests: Vec<CounterPath> = [
        r"\Hist(a)\Latency:p99.90",
        r"\Hist(*)\Sizes:p50",
        r"\Hist(later)\Latency:p50",
    ]
    .iter()
    .map(|p| pdh::parse(p).unwrap())
    .collect();
    let mut header = Vec::new();
    let mut columns = Columns::new(&requests, &first, &names, FormatOptions::default(), |p| {
        header.push(p.to_string());
        Ok::<(), std::convert::Infallible>(())
    })
    .unwrap();
    assert_eq!(
        header,
        [
            r"\\box\Hist(a)\Latency:p99.9",
            r"\\box\Hist(a)\Sizes:p50",
            r"\\box\Hist(later)\Latency:p50",
        ]
    );
    let factors = Default::default();
    assert_eq!(columns.sample(&first, &names, &factors), [None, None, None]);
    let second = collection(
        2,
        &[
            ("a", &latency(0, 10), &[1, 0, 0]),
            ("later", &latency(3, 0), &zero),
        ],
    );
    assert_eq!(
        columns.sample(&second, &names, &factors),
        [Some(10.5), Some(5.0), None]
    );
    let third = collection(
        3,
        &[
            ("a", &latency(0, 10), &[1, 0, 1]),
            ("later", &latency(4, 0), &zero),
        ],
    );
    assert_eq!(
        columns.sample(&third, &names, &factors),
        [None, Some(20.0), Some(8.5)]
    );
    assert_eq!(columns.never_matched().count(), 0);
}

#[test]
fn a_percentile_path_that_matches_nothing_suggests_the_same_percentile_nearby() {
    let names = names("Position");
    let zero = [0, 0, 0];
    let snap = collection(
        1,
        &[
            ("alpha", &latency(0, 0), &zero),
            ("beta", &latency(0, 0), &zero),
        ],
    );
    let err = check(
        &[pdh::parse(r"\Hist(alpah)\Latency:p99.9").unwrap()],
        &snap,
        &names,
    )
    .unwrap_err();
    let PathError::NoMatch { near, .. } = &err else {
        panic!("{err}");
    };
    assert_eq!(near[0], r"\Hist(alpha)\Latency:p99.9", "{near:?}");
    assert!(
        near.iter().all(|p| p.ends_with(r"\Latency:p99.9")),
        "{near:?}"
    );
    // A name no histogram has: the usual near matches, among the counters.
    let err = check(
        &[pdh::parse(r"\Hist(alpha)\Latenc:p99").unwrap()],
        &snap,
        &names,
    )
    .unwrap_err();
    assert!(
        matches!(&err, PathError::NoMatch { near, .. } if !near.is_empty()),
        "{err}"
    );
}

/// A collector holds its watch lease on what a percentile reads by the histogram's name: its
/// sum's name index, never the bucket counter's 0.
#[test]
fn a_percentile_is_watched_under_its_histograms_name() {
    let names = names("Position");
    let snap = collection(1, &[("a", &latency(0, 0), &[0, 0, 0])]);
    let mut s = sampler(&[r"\Hist(*)\Sizes:p99"]);
    assert_eq!(s.titles(&snap, &names), [3000, 3004]);
}
