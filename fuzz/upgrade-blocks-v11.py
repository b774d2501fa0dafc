#!/usr/bin/env python3
"""Rewrites block files of layout 10 as layout 11 (histograms: a counter record's last word, reserved
and zero until then, holds a histogram's descriptor offset, and the histograms' descriptors lie
between the counter records and the members table). A layout-10 block has no histogram, so its
records' last words are zero and its members table follows its records: its bytes keep their
meaning, and only the header's version (offset 8) changes. A block whose counter records' last
word is not zero is left alone (it was not a layout-10 block made by prfdata).

For committed corpus inputs that cannot be regenerated from a real run (the fuzzers' finds,
`regression-*`): `fuzz/upgrade-blocks-v11.py [--from 10 --to 11] FILE...` rewrites each in
place; a file that is not a block of version `--from` is left alone. The seeds made from real
runs come from `fuzz/make-seeds.sh`."""
import struct

import upgrade_cli

HEADER_SIZE = 256
OBJECT_RECORD_SIZE = 128
COUNTER_RECORD_SIZE = 64
# BlockHeader: num_objects at 28, num_counters at 40 (prfdata/src/layout.rs);
# CounterRecord: the histogram descriptor offset (reserved in layout 10) at 60.
NUM_OBJECTS, NUM_COUNTERS, RECORD_HISTOGRAM = 28, 40, 60


def upgrade(data, old_version, new_version):
    if len(data) < HEADER_SIZE or data[:8] != b"PRFDATA\0" or struct.unpack_from("<I", data, 8)[0] != old_version:
        return None
    objects = struct.unpack_from("<I", data, NUM_OBJECTS)[0]
    counters = struct.unpack_from("<I", data, NUM_COUNTERS)[0]
    first = HEADER_SIZE + objects * OBJECT_RECORD_SIZE
    for i in range(counters):
        at = first + i * COUNTER_RECORD_SIZE + RECORD_HISTOGRAM
        if at + 4 > len(data) or struct.unpack_from("<I", data, at)[0] != 0:
            return None
    out = bytearray(data)
    struct.pack_into("<I", out, 8, new_version)
    return bytes(out)


upgrade_cli.run(upgrade, 10, 11)
