#!/usr/bin/env python3
"""Rewrites layout-6 block files as layout 8 (the `layout17` branch): the object record's
reserved room gained `block_stride` (offset 88), the shard geometry (92..112) and the counter
record's `shard` word (offset 56); a layout-6 block is a layout-8 block whose objects are packed
(stride = counter block size) and have no sharded counters. Only the version and each object's
stride change; regions stay where they are.

For committed corpus inputs that cannot be regenerated from a real run (the fuzzers' finds,
`regression-*`): `fuzz/upgrade-blocks-v8.py [--from 6 --to 8] FILE...` rewrites each in place;
a file that is not a block of version `--from` is left alone. (Merged with another branch's
layout bump, e.g. 7's header members table: upgrade with that branch's script first, then this
one with `--from 7`.)"""
import struct

def upgrade(data, old_version, new_version):
    if data[:8] != b"PRFDATA\0" or struct.unpack_from("<I", data, 8)[0] != old_version:
        return None
    num_objects, = struct.unpack_from("<I", data, 28)
    objects_offset, = struct.unpack_from("<I", data, 44)
    out = bytearray(data)
    struct.pack_into("<I", out, 8, new_version)
    for i in range(num_objects):
        at = objects_offset + 128 * i
        if at + 128 > len(out):
            break
        block_size, = struct.unpack_from("<I", out, at + 32)
        struct.pack_into("<I", out, at + 88, block_size)
    return bytes(out)

import upgrade_cli

upgrade_cli.run(upgrade, 6, 8)
