#!/usr/bin/env python3
"""Prints BENCHMARKS.md's tables from the last `cargo bench -p prfdata-benches` run.

Reads Criterion's estimates (target/criterion/<group>/<id>/new/estimates.json) and gives, per
group, each id's median time with its 95% confidence interval and its ratio to the group's
baseline(s) of the same run. Run from the workspace root.
"""
import json
import os
import sys

# group -> (ids in order, {baseline name: baseline id})
GROUPS = {
    "counter_update": (
        ["raw_atomic_u64", "prfdata_get_ctr64", "prfdata_get_ctr32", "prfdata_cached",
         "prfdata_sharded", "prometheus_client", "prometheus", "metrics"],
        {"raw_atomic_u64": "raw_atomic_u64", "prometheus_client": "prometheus_client"},
    ),
    "counter_contended": (
        ["prfdata_same_counter", "prfdata_two_instances", "prfdata_sharded_same_counter",
         "raw_same_counter", "raw_two_counters"],
        {"raw_same_counter": "raw_same_counter", "raw_two_counters": "raw_two_counters"},
    ),
    "lock": (
        ["optex", "std_mutex", "parking_lot_mutex", "raw_sync_mutex",
         "optex_two_processes", "raw_sync_two_processes"],
        {"std_mutex": "std_mutex", "raw_sync_mutex": "raw_sync_mutex"},
    ),
    "collect": (
        ["provider_1000x16", "memcpy_same_bytes", "decode_1000x16", "end_to_end_1000x16",
         "provider_1000x16_packed", "provider_100000x16", "memcpy_100000x16_bytes"],
        {"memcpy_same_bytes": "memcpy_same_bytes", "provider_1000x16": "provider_1000x16"},
    ),
    "instances": (
        ["add_remove_at_10", "add_remove_at_100k"],
        {"add_remove_at_10": "add_remove_at_10"},
    ),
    "isolation": (
        ["host/1", "host/4", "host/8", "in_process/1", "in_process/4", "in_process/8"],
        {"host/1": "host/1", "in_process/1": "in_process/1"},
    ),
}


def fmt(ns):
    if ns >= 1000:
        return f"{ns / 1000:.2f} µs"
    return f"{ns:.2f} ns"


def load(root, group, ident):
    path = os.path.join(root, group, ident, "new", "estimates.json")
    if not os.path.exists(path):
        return None
    with open(path) as f:
        median = json.load(f)["median"]
    ci = median["confidence_interval"]
    return median["point_estimate"], ci["lower_bound"], ci["upper_bound"]


# The performance targets: (numerator, denominator, target ratio).
TARGETS = [
    ("collect/provider_1000x16", "collect/memcpy_same_bytes", 1.5),
    ("collect/decode_1000x16", "collect/memcpy_same_bytes", 4.0),
    ("collect/end_to_end_1000x16", "collect/memcpy_same_bytes", 8.0),
    ("counter_contended/prfdata_two_instances", "counter_contended/raw_two_counters", 1.15),
    ("counter_contended/prfdata_sharded_same_counter", "counter_contended/raw_two_counters", 1.3),
    ("lock/optex_two_processes", "lock/raw_sync_two_processes", 1.0),
    ("collect/provider_100000x16", "collect/provider_1000x16", 110.0),
    ("counter_update/prfdata_get_ctr64", "counter_update/raw_atomic_u64", 1.05),
    ("counter_update/prfdata_sharded", "counter_update/raw_atomic_u64", 0.3),
]

# What the targets are read beside: how much the floors themselves move (no target).
CONTEXT = [
    ("collect/memcpy_100000x16_bytes", "collect/memcpy_same_bytes"),
    ("collect/provider_100000x16", "collect/memcpy_100000x16_bytes"),
]


def targets(root):
    """The issue-17 table: each ratio of medians, with the range its two 95% CIs allow."""
    print("| ratio | medians | ratio (CI range) | target | |")
    print("|---|---:|---:|---:|---|")
    for num, den, target in TARGETS:
        a = load(root, *num.split("/"))
        b = load(root, *den.split("/"))
        if a is None or b is None:
            print(f"| `{num}` ÷ `{den}` | not run | | ≤ {target}× | |")
            continue
        r = a[0] / b[0]
        lo, hi = a[1] / b[2], a[2] / b[1]
        met = "met" if r <= target else "**missed**"
        print(f"| `{num}` ÷ `{den}` | {fmt(a[0])} ÷ {fmt(b[0])} | {r:.2f}× ({lo:.2f}–{hi:.2f}) "
              f"| ≤ {target}× | {met} |")
    for num, den in CONTEXT:
        a = load(root, *num.split("/"))
        b = load(root, *den.split("/"))
        if a is None or b is None:
            continue
        r = a[0] / b[0]
        lo, hi = a[1] / b[2], a[2] / b[1]
        print(f"| `{num}` ÷ `{den}` | {fmt(a[0])} ÷ {fmt(b[0])} | {r:.2f}× ({lo:.2f}–{hi:.2f}) "
              f"| (context) | |")
    print()


def main():
    root = sys.argv[1] if len(sys.argv) > 1 else "target/criterion"
    targets(root)
    for group, (ids, baselines) in GROUPS.items():
        found = {i: load(root, group, i) for i in ids}
        base = {name: found[b][0] for name, b in baselines.items() if found.get(b)}
        print(f"### `{group}`\n")
        print("| id | median | 95% CI | " + " | ".join(f"÷ {n}" for n in base) + " |")
        print("|---|---:|---:|" + "---:|" * len(base))
        for ident in ids:
            est = found[ident]
            if est is None:
                print(f"| `{ident}` | not run |" + " |" * (1 + len(base)))
                continue
            med, lo, hi = est
            ratios = " | ".join(f"{med / b:.2f}×" for b in base.values())
            print(f"| `{ident}` | {fmt(med)} | {fmt(lo)} – {fmt(hi)} | {ratios} |")
        print()


if __name__ == "__main__":
    main()
