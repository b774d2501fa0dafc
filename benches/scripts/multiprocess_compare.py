#!/usr/bin/env python3
"""The worker-churn scenario of process-owned instances with prometheus_client in multiprocess mode.

The same scenario as prfdata's `churn` binary (benches/src/bin/churn.rs): a pool of POOL worker
processes (forked, as gunicorn's are); each performs K increments of one Counter, reports what
it completed through a pipe and waits; the parent ends it, every KILL_EVERY-th with SIGKILL, the
others by a normal exit, and forks a replacement, until DEATHS workers have died. The parent
scrapes with MultiProcessCollector + generate_latest, and prints one `key value` line per figure,
with the names the churn binary uses (collect_us_* is one generate_latest here).

Run by multiprocess_compare.sh, which makes the venv and pins prometheus-client's version.
Usage: multiprocess_compare.py DIR [--deaths N] [--pool P] [--k K] [--kill-every M]
       [--reads R] [--sample-ms S]   (DIR: PROMETHEUS_MULTIPROC_DIR, made empty first)
"""

import argparse
import os
import shutil
import signal
import statistics
import sys
import time


def parse():
    p = argparse.ArgumentParser()
    p.add_argument("dir")
    p.add_argument("--deaths", type=int, default=1000)
    p.add_argument("--pool", type=int, default=8)
    p.add_argument("--k", type=int, default=10000)
    p.add_argument("--kill-every", type=int, default=3)
    p.add_argument("--reads", type=int, default=200)
    p.add_argument("--sample-ms", type=float, default=5.0)
    return p.parse_args()


args = parse()
shutil.rmtree(args.dir, ignore_errors=True)
os.makedirs(args.dir)
# prometheus_client reads it at import.
os.environ["PROMETHEUS_MULTIPROC_DIR"] = args.dir

from prometheus_client import CollectorRegistry, Counter, generate_latest  # noqa: E402
from prometheus_client.multiprocess import MultiProcessCollector  # noqa: E402

JOBS = Counter("jobs", "Increments performed.")
registry = CollectorRegistry()
MultiProcessCollector(registry)


def total():
    """The counter's total over every process, dead ones included, from one collection."""
    for metric in registry.collect():
        if metric.name == "jobs":
            return sum(s.value for s in metric.samples if s.name == "jobs_total")
    return 0.0


def scrape_us(reads):
    times = []
    for _ in range(reads):
        t = time.perf_counter()
        generate_latest(registry)
        times.append(time.perf_counter() - t)
    return statistics.median(times) * 1e6


def usage():
    files = nbytes = allocated = 0
    for entry in os.scandir(args.dir):
        st = entry.stat()
        files += 1
        nbytes += st.st_size
        allocated += st.st_blocks * 512
    return files, nbytes, allocated


reports_r, reports_w = os.pipe()


def spawn(slot):
    """Forks a worker; returns (pid, the write end of its control pipe)."""
    ctl_r, ctl_w = os.pipe()
    pid = os.fork()
    if pid == 0:
        # Only the parent may hold a worker's control pipe open, or closing it would not end
        # the worker: close the siblings' copies this fork inherited.
        os.close(ctl_w)
        for entry in pool:
            if entry is not None:
                os.close(entry[1])
        for _ in range(args.k):
            JOBS.inc()
        os.write(reports_w, f"{slot} {args.k}\n".encode())
        os.read(ctl_r, 1)  # wait: end of input (or a SIGKILL)
        os._exit(0)
    os.close(ctl_r)
    return pid, ctl_w


buf = b""


def next_report():
    """(slot, increments) of the next worker that finished."""
    global buf
    while b"\n" not in buf:
        buf += os.read(reports_r, 4096)
    line, buf = buf.split(b"\n", 1)
    slot, n = line.split()
    return int(slot), int(n)


def out(key, value):
    print(key, value, flush=True)


pool = [None] * args.pool
for slot in range(args.pool):
    pool[slot] = spawn(slot)
reported = 0
for _ in range(args.pool):
    reported += next_report()[1]
out("collect_us_start", f"{scrape_us(args.reads):.2f}")
files, nbytes, allocated = usage()
out("files_start", files)
out("bytes_start", nbytes)
out("allocated_start", allocated)

# The churn; `_Total`'s counterpart sampled at most every sample_ms, between deaths.
deaths = pending = samples = decreases = errors = 0
ready = list(range(args.pool))
last = float("-inf")
next_sample = time.monotonic()
start = time.monotonic()
while deaths < args.deaths:
    if ready:
        slot = ready.pop()
    else:
        slot, n = next_report()
        reported += n
        pending -= 1
    pid, ctl_w = pool[slot]
    deaths += 1
    if deaths % args.kill_every == 0:
        os.kill(pid, signal.SIGKILL)
    os.close(ctl_w)
    os.waitpid(pid, 0)
    pool[slot] = None
    pool[slot] = spawn(slot)
    pending += 1
    if time.monotonic() >= next_sample:
        try:
            t = total()
        except Exception as e:  # a scrape that raced a new worker's file: counted, not fatal
            errors += 1
            if errors <= 3:
                print(f"scrape failed: {type(e).__name__}: {e}", file=sys.stderr)
            continue
        samples += 1
        if t < last:
            decreases += 1
            print(f"total went from {last} to {t}", file=sys.stderr)
        last = t
        next_sample = time.monotonic() + args.sample_ms / 1000
for _ in range(pending):
    reported += next_report()[1]
churn = time.monotonic() - start
out("deaths", deaths)
out("churn_s", f"{churn:.2f}")
out("collect_us_end", f"{scrape_us(args.reads):.2f}")
files, nbytes, allocated = usage()
out("files_end", files)
out("bytes_end", nbytes)
out("allocated_end", allocated)
out("samples", samples)
out("decreases", decreases)
out("scrape_errors", errors)
out("reported", reported)
out("total_end", int(total()))
for pid, ctl_w in pool:
    os.close(ctl_w)
    os.waitpid(pid, 0)
out("files_after_exit", usage()[0])
