#!/usr/bin/env python3
"""Rewrites block files of layout 9 as layout 10 (presence locks: whether a process of a block
is alive is told by a lock it holds on the block's file, across pid namespaces). The bytes of a
block keep their meaning; only the header's version (offset 8) changes.

For committed corpus inputs that cannot be regenerated from a real run (the fuzzers' finds,
`regression-*`): `fuzz/upgrade-blocks-v10.py [--from 9 --to 10] FILE...` rewrites each in
place; a file that is not a block of version `--from` is left alone. The seeds made from real
runs come from `fuzz/make-seeds.sh`."""
import struct

import upgrade_cli


def upgrade(data, old_version, new_version):
    if len(data) < 256 or data[:8] != b"PRFDATA\0" or struct.unpack_from("<I", data, 8)[0] != old_version:
        return None
    out = bytearray(data)
    struct.pack_into("<I", out, 8, new_version)
    return bytes(out)


upgrade_cli.run(upgrade, 9, 10)
