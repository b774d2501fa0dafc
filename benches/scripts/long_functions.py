#!/usr/bin/env python3
"""List non-test Rust functions longer than a limit.

Usage: long_functions.py [ROOT] [--limit N] [--all] [--code] [--check]

Walks ROOT's crates (every `src/` folder outside target/, .git/, tests/; fuzz/ and benches/
only with --all), skips `#[cfg(test)]` items (a test module, inline or in its own file, or a
test function) and prints every `fn` whose span, from the line of `fn` to its closing brace,
is longer than N lines (default 80), longest first:

    LINES  CODE  path:line  name

LINES is the span; CODE the span's non-blank lines that are not comments. --code sorts and
filters on CODE instead of LINES. --check exits with status 1 if any function is listed (CI
runs it). Brace matching skips strings, raw strings, chars and comments.
"""
import os, re, sys

def strip(src):
    """Return src with comments, strings and char literals blanked (newlines kept)."""
    out = []
    i, n = 0, len(src)
    while i < n:
        c = src[i]
        if src.startswith('//', i):
            j = src.find('\n', i)
            j = n if j < 0 else j
            out.append(' ' * (j - i)); i = j; continue
        if src.startswith('/*', i):
            depth, j = 1, i + 2
            while j < n and depth:
                if src.startswith('/*', j): depth += 1; j += 2
                elif src.startswith('*/', j): depth -= 1; j += 2
                else: j += 1
            out.append(''.join(ch if ch == '\n' else ' ' for ch in src[i:j])); i = j; continue
        m = re.match(r'b?r(#*)"', src[i:i + 260]) if c in 'rb' and (i == 0 or not (src[i-1].isalnum() or src[i-1] == '_')) else None
        if m:
            close = '"' + m.group(1)
            j = src.find(close, i + m.end())
            j = n if j < 0 else j + len(close)
            out.append(''.join(ch if ch == '\n' else ' ' for ch in src[i:j])); i = j; continue
        if c == '"' or (c == 'b' and src.startswith('b"', i) and (i == 0 or not (src[i-1].isalnum() or src[i-1] == '_'))):
            j = i + (2 if c == 'b' else 1)
            while j < n and src[j] != '"':
                j += 2 if src[j] == '\\' else 1
            j += 1
            out.append(''.join(ch if ch == '\n' else ' ' for ch in src[i:j])); i = j; continue
        if c == "'":
            m = re.match(r"'(\\(x[0-9a-fA-F]{2}|u\{[0-9a-fA-F]+\}|.)|[^\\'\n])'", src[i:i + 12])
            if m:
                out.append(' ' * m.end()); i += m.end(); continue
        out.append(c); i += 1
    return ''.join(out)

CFG_TEST = re.compile(r'#\s*\[\s*cfg\s*\(\s*test\s*\)\s*\]')
FN = re.compile(r'\bfn\s+([A-Za-z_][A-Za-z0-9_]*)')
MOD_DECL = re.compile(r'#\s*\[\s*cfg\s*\(\s*test\s*\)\s*\]\s*(?:#\s*\[[^\]]*\]\s*)*(?:pub(?:\([^)]*\))?\s+)?mod\s+([A-Za-z_][A-Za-z0-9_]*)\s*;')

def item_end(s, start):
    """End offset of the item starting at start: its matching '}' or its ';' at depth 0."""
    depth = 0; i = start; n = len(s)
    while i < n:
        ch = s[i]
        if ch in '([': depth += 1
        elif ch in ')]': depth -= 1
        elif ch == ';' and depth == 0: return i + 1
        elif ch == '{' and depth == 0:
            d = 0
            while i < n:
                if s[i] == '{': d += 1
                elif s[i] == '}':
                    d -= 1
                    if d == 0: return i + 1
                i += 1
            return n
        i += 1
    return n

def test_spans(s):
    spans = []
    for m in CFG_TEST.finditer(s):
        j = m.end()
        # skip further attributes
        while True:
            k = re.match(r'\s*#\s*\[', s[j:])
            if not k: break
            d = 0; p = j + k.end() - 1
            while p < len(s):
                if s[p] == '[': d += 1
                elif s[p] == ']':
                    d -= 1
                    if d == 0: break
                p += 1
            j = p + 1
        spans.append((m.start(), item_end(s, j)))
    return spans

def test_files(root_src_files):
    """Files declared as `#[cfg(test)] mod x;` by their parent."""
    skip = set()
    for p in root_src_files:
        s = strip(open(p, encoding='utf-8', errors='replace').read())
        base = os.path.dirname(p)
        stem = os.path.splitext(os.path.basename(p))[0]
        sub = base if stem in ('lib', 'main', 'mod') else os.path.join(base, stem)
        for m in MOD_DECL.finditer(s):
            for cand in (os.path.join(sub, m.group(1) + '.rs'), os.path.join(sub, m.group(1), 'mod.rs')):
                skip.add(os.path.normpath(cand))
    return skip

def functions(path):
    raw = open(path, encoding='utf-8', errors='replace').read()
    s = strip(raw)
    lines = raw.split('\n')
    spans = test_spans(s)
    res = []
    for m in FN.finditer(s):
        if any(a <= m.start() < b for a, b in spans): continue
        end = item_end(s, m.end())
        if s[end - 1] != '}': continue  # a declaration without body
        l0 = s.count('\n', 0, m.start()); l1 = s.count('\n', 0, end - 1)
        span = l1 - l0 + 1
        stripped = s.split('\n')[l0:l1 + 1]
        code = sum(1 for t in stripped if t.strip())
        res.append((span, code, path, l0 + 1, m.group(1)))
    return res

def main():
    args = sys.argv[1:]
    limit = 80; allc = '--all' in args; bycode = '--code' in args
    if '--limit' in args: limit = int(args[args.index('--limit') + 1])
    pos = [a for i, a in enumerate(args) if not a.startswith('--') and (i == 0 or args[i-1] != '--limit')]
    root = pos[0] if pos else '.'
    skipdirs = {'target', '.git', 'tests'} | (set() if allc else {'fuzz', 'benches'})
    files = []
    for d, dirs, fs in os.walk(root):
        dirs[:] = sorted(x for x in dirs if x not in skipdirs)
        rel = os.path.relpath(d, root).split(os.sep)
        if 'src' not in rel and not (allc and ('benches' in rel or 'fuzz_targets' in rel)): continue
        files += [os.path.normpath(os.path.join(d, f)) for f in sorted(fs) if f.endswith('.rs')]
    skip = test_files(files)
    rows = []
    for p in files:
        if p in skip: continue
        rows += functions(p)
    key = (lambda r: r[1]) if bycode else (lambda r: r[0])
    rows = sorted((r for r in rows if key(r) > limit), key=lambda r: (-key(r), r[2]))
    for span, code, p, line, name in rows:
        print(f"{span:5d} {code:5d}  {os.path.relpath(p, root)}:{line}  {name}")
    print(f"{len(rows)} functions over {limit} {'code ' if bycode else ''}lines")
    if '--check' in args and rows:
        sys.exit(1)

if __name__ == '__main__':
    main()
