#!/usr/bin/env python3
"""Lists symm's public headers (include/symm/*.hpp, and *.cuh with --cuda), one name a line, sorted.

Run by tests/headers/meson.build at configure time: `list_headers.py <include/symm dir> [--cuda]`.
"""
import pathlib
import sys


def main() -> int:
    args = sys.argv[1:]
    cuda = '--cuda' in args
    dirs = [a for a in args if not a.startswith('--')]
    if len(dirs) != 1:
        print(f'usage: {sys.argv[0]} <include/symm> [--cuda]', file=sys.stderr)
        return 2
    root = pathlib.Path(dirs[0])
    patterns = ['*.hpp', '*.cuh'] if cuda else ['*.hpp']
    names = sorted({p.name for pattern in patterns for p in root.glob(pattern) if p.is_file()})
    print('\n'.join(names))
    return 0


if __name__ == '__main__':
    sys.exit(main())
