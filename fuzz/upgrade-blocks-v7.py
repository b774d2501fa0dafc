#!/usr/bin/env python3
"""Rewrites block files of layout 6 as layout 7 (the members table): a table of
256 16-byte entries (MAX_MEMBERS x MemberEntry, all free) is inserted right after the counter
records (64-aligned), the regions after it move by its 4096 bytes and the object records' region
offsets with them; the header gets its version, total size, `members_offset` and `max_members`
(its former reserved room: offsets 176 and 180), `closed` zero.

For committed corpus inputs that cannot be regenerated from a real run (the fuzzers' finds,
`regression-*`, and the other seeds until `fuzz/make-seeds.sh` is run again):
`fuzz/upgrade-blocks-v7.py [--from 6 --to 7] FILE...` rewrites each in place; a file that is not
a block of version `--from` is left alone. (When another branch bumps the layout too, upgrade
its files with `--from` its version and `--to` the merged one.) Layout 9 also puts the object
regions on a 128-byte line after the table, which this script does not: regenerate seeds with
`fuzz/make-seeds.sh` instead."""
import struct

MEMBERS = 256 * 16
MEMBERS_OFFSET_AT, MAX_MEMBERS_AT, CLOSED_AT = 176, 180, 184

def align64(n):
    return (n + 63) & ~63

def upgrade(data, old_version, new_version):
    if len(data) < 256 or data[:8] != b"PRFDATA\0" or struct.unpack_from("<I", data, 8)[0] != old_version:
        return None
    total, = struct.unpack_from("<Q", data, 16)
    num_objects, = struct.unpack_from("<I", data, 28)
    num_counters, objects_offset, counters_offset = struct.unpack_from("<III", data, 40)
    members_at = align64(counters_offset + 64 * num_counters)
    if members_at > len(data):
        return None
    head = bytearray(data[:members_at])
    struct.pack_into("<I", head, 8, new_version)
    struct.pack_into("<Q", head, 16, total + MEMBERS)
    struct.pack_into("<III", head, MEMBERS_OFFSET_AT, members_at, 256, 0)
    for i in range(num_objects):
        at = objects_offset + 128 * i
        if at + 64 > len(head):
            break
        for f in (40, 48, 56):
            v, = struct.unpack_from("<Q", head, at + f)
            struct.pack_into("<Q", head, at + f, (v + MEMBERS) % (1 << 64))
    return bytes(head) + b"\0" * MEMBERS + data[members_at:]

import upgrade_cli

upgrade_cli.run(upgrade, 6, 7)
