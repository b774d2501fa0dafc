#!/usr/bin/env python3
"""Rewrites block files whose counter records are 32 bytes (layout 3) with the 64-byte counter
records of the Windows 95 stat-server extras (layout 4 on the `stats` branch): the regions after
the records move by the difference, and the object records' region offsets with them; the header is
copied as it is but for its version and total size.

For committed corpus inputs that cannot be regenerated from a real run (the fuzzers' finds,
`regression-*`): `fuzz/upgrade-blocks-v4.py [--from 3 --to 4] FILE...` rewrites each in place;
a file that is not a block of version `--from` is left alone. (When the header's own fields
changed in another branch's layout bump, upgrade that branch's files: `--from` its version,
`--to` the merged one.)"""
import struct

def align64(n):
    return (n + 63) & ~63

def upgrade(data, old_version, new_version):
    if data[:8] != b"PRFDATA\0" or struct.unpack_from("<I", data, 8)[0] != old_version:
        return None
    total, = struct.unpack_from("<Q", data, 16)
    num_objects, = struct.unpack_from("<I", data, 28)
    num_counters, objects_offset, counters_offset = struct.unpack_from("<III", data, 40)
    old_regions = align64(counters_offset + 32 * num_counters)
    new_regions = align64(counters_offset + 64 * num_counters)
    delta = new_regions - old_regions
    head = bytearray(data[:counters_offset])
    struct.pack_into("<I", head, 8, new_version)
    struct.pack_into("<Q", head, 16, total + delta)
    for i in range(num_objects):
        at = objects_offset + 128 * i
        if at + 64 > len(head):
            break
        for f in (40, 48, 56):
            v, = struct.unpack_from("<Q", head, at + f)
            struct.pack_into("<Q", head, at + f, (v + delta) % (1 << 64))
    records = bytearray()
    for i in range(num_counters):
        rec = data[counters_offset + 32 * i: counters_offset + 32 * i + 24]
        records += rec.ljust(64, b"\0")
    out = head + records
    out = out.ljust(new_regions, b"\0") + data[old_regions:]
    return bytes(out)

import upgrade_cli

upgrade_cli.run(upgrade, 3, 4)
