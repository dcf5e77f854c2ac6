#!/usr/bin/env python3
"""The house drawn from the code's own includes (README, "How it is put
together"): every #include "..." in src/ must point to the same part or a part
on a lower floor, never up and never round a circle; and no code may tell
backends apart by their name string (they carry a kind and capabilities,
src/backend/backend.h); cli/ never includes a backend's headers. Exit 1 with
one line per violation."""
import os
import re
import sys

# Lower number = lower floor. A part may include its own files and those of
# parts on lower floors; parts on one floor must not include one another (the
# two backends share only backend.h, the table they both fill).
FLOORS = {
    'core': 0,
    'device': 1,
    'backend': 2,  # backend.h, the registry
    'backend/host': 3, 'backend/opencl': 3,
    'ops': 4,
    'model': 5,
    'train': 6,
    'check': 7, 'bench': 7,
    'context.c': 8,  # the composition root
}

# Includes that still run up a floor, each with the change that removes it;
# an entry that no longer matches anything is reported (not a failure) so it
# can be deleted.
KNOWN = set()

def part_of(path):
    """'backend/host/pool.c' -> 'backend/host'; 'context.c' -> 'context.c'."""
    bits = path.split('/')
    if len(bits) == 1:
        return bits[0]
    if bits[0] == 'backend' and len(bits) > 2:
        return 'backend/' + bits[1]
    return bits[0]

def main(root):
    src = os.path.join(root, 'src')
    bad = []
    seen = set()
    name_cmp = re.compile(r'(strcmp|strncmp)\s*\([^;]*ops->name|ops->name\s*[!=]=')
    for dirpath, _, files in os.walk(src):
        for f in sorted(files):
            if not f.endswith(('.c', '.h')):
                continue
            path = os.path.relpath(os.path.join(dirpath, f), src)
            a = part_of(path)
            if a not in FLOORS:
                bad.append(f'{path}: part {a} has no floor in {__file__}')
                continue
            text = open(os.path.join(dirpath, f), encoding='utf-8').read()
            for n, line in enumerate(text.splitlines(), 1):
                m = re.match(r'\s*#\s*include\s+"([^"]+)"', line)
                if m:
                    b = part_of(m.group(1))
                    if b == a or b not in FLOORS:
                        continue  # own part, or a generated/local header
                    up = FLOORS[b] > FLOORS[a]
                    sideways = FLOORS[b] == FLOORS[a]
                    if (path, m.group(1)) in KNOWN:
                        seen.add((path, m.group(1)))
                        continue
                    if up or sideways:
                        where = 'up' if up else 'sideways'
                        bad.append(f'src/{path}:{n}: includes "{m.group(1)}" ({where}: {a} -> {b})')
                if name_cmp.search(line):
                    bad.append(f'src/{path}:{n}: tells backends apart by name: {line.strip()}')
    # The command line sits above the root: it may include any part but never
    # a backend's insides (it reaches backends through ops/, check/, bench/).
    cli = os.path.join(root, 'cli')
    for f in sorted(os.listdir(cli)):
        if not f.endswith(('.c', '.h')):
            continue
        for n, line in enumerate(open(os.path.join(cli, f), encoding='utf-8').read().splitlines(), 1):
            m = re.match(r'\s*#\s*include\s+"(backend/[^"]+)"', line)
            if m:
                bad.append(f'cli/{f}:{n}: includes "{m.group(1)}" (the CLI never reaches into a backend)')
            if 'ops->name' in line:
                bad.append(f'cli/{f}:{n}: reads a backend table: {line.strip()}')
    for path, inc in sorted(KNOWN - seen):
        print(f'note: src/{path} no longer includes "{inc}": delete its KNOWN entry')
    for b in bad:
        print(b)
    if bad:
        print(f'{len(bad)} layering violation(s)')
        return 1
    print('layers: every include points down; no backend is told apart by name')
    return 0

if __name__ == '__main__':
    sys.exit(main(sys.argv[1] if len(sys.argv) > 1 else os.path.join(os.path.dirname(__file__), '..', '..')))
