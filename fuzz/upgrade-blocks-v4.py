#!/usr/bin/env python3
"""Rewrites layout-3 block files as layout 4 (counter records 32 -> 64 bytes; the regions after
the records move by the difference, and the object records' region offsets with them).

For committed corpus inputs that cannot be regenerated from a real run (the fuzzers' finds,
`regression-*`): `fuzz/upgrade-blocks-v4.py FILE...` rewrites each in place; a file that is not
a layout-3 block is left alone."""
import struct, sys

def align64(n):
    return (n + 63) & ~63

def upgrade(data):
    if data[:8] != b"PRFDATA\0" or struct.unpack_from("<I", data, 8)[0] != 3:
        return None
    total, = struct.unpack_from("<Q", data, 16)
    num_objects, = struct.unpack_from("<I", data, 28)
    num_counters, objects_offset, counters_offset = struct.unpack_from("<III", data, 40)
    old_regions = align64(counters_offset + 32 * num_counters)
    new_regions = align64(counters_offset + 64 * num_counters)
    delta = new_regions - old_regions
    head = bytearray(data[:counters_offset])
    struct.pack_into("<I", head, 8, 4)
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

for path in sys.argv[1:]:
    with open(path, "rb") as f:
        new = upgrade(f.read())
    if new is not None:
        with open(path, "wb") as f:
            f.write(new)
        print(f"{path}: layout 4")
