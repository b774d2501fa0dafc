#!/usr/bin/env python3
"""Non-blank, non-comment lines of each crate's src/ up to the first #[cfg(test)] item."""
import os, re, sys
root = sys.argv[1] if len(sys.argv) > 1 else '.'
crates = {}
for dirpath, dirs, files in os.walk(root):
    dirs[:] = [d for d in dirs if d not in ('target', '.git', 'fuzz', 'benches', 'tests')]
    if '/src' not in dirpath + '/' and not dirpath.endswith('/src'):
        pass
    for f in files:
        if not f.endswith('.rs'): continue
        p = os.path.join(dirpath, f)
        rel = os.path.relpath(p, root)
        parts = rel.split(os.sep)
        if 'src' not in parts: continue
        crate = os.sep.join(parts[:parts.index('src')]) or '.'
        n = 0
        in_block = False
        for line in open(p, encoding='utf-8', errors='replace'):
            s = line.strip()
            if s.startswith('#[cfg(test)]'): break
            if in_block:
                if '*/' in s: in_block = False
                continue
            if not s: continue
            if s.startswith('//'): continue
            if s.startswith('/*'):
                if '*/' not in s: in_block = True
                continue
            n += 1
        crates[crate] = crates.get(crate, 0) + n
tot = 0
for c in sorted(crates):
    print(f"{crates[c]:7d} {c}"); tot += crates[c]
print(f"{tot:7d} total")
