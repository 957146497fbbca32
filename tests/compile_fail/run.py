#!/usr/bin/env python3
"""Compile-fail harness (suite `compile`): compiles one test file and checks the outcome its first line announces.

    // expect-error: <python regex>   the file must NOT compile, and the regex must match the compiler's output
    // expect-first-error: <regex>     the same, and the regex must match the first error line (a mistake's first
                                      error is what its user reads)
    // expect-compile: ok             the file must compile (a positive control for the negative tests beside it)

    run.py --list <dir> [--cuda]                 print the test files (*.cpp; *.cu too with --cuda), one a line
    run.py <file> -- <compiler> <flags>...       run one test; the harness adds the syntax-only flag for the compiler

.cpp files are checked with the library's C++ compiler and flags (-fsyntax-only); .cu files with nvcc (-c to a temporary
object, as nvcc has no syntax-only mode). tests/compile_fail/meson.build passes the flags.
"""
import os
import pathlib
import re
import subprocess
import sys
import tempfile

DIRECTIVE = re.compile(r'^\s*//\s*expect-(error|first-error|compile)\s*:\s*(.*?)\s*$')
# A compiler's error line: gcc's and clang's 'file:line:col: error: ...', nvcc's 'file(line): error: ...'.
ERROR_LINE = re.compile(r'\berror\b\s*:')


def list_tests(directory: str, cuda: bool) -> int:
    suffixes = {'.cpp', '.cu'} if cuda else {'.cpp'}
    for p in sorted(pathlib.Path(directory).iterdir()):
        if p.is_file() and p.suffix in suffixes:
            print(p.name)
    return 0


def run_test(path: pathlib.Path, command: list[str]) -> int:
    first = path.read_text().splitlines()[:1]
    match = DIRECTIVE.match(first[0]) if first else None
    if not match:
        print(f'{path}: the first line must be "// expect-error: <regex>", "// expect-first-error: <regex>" or '
              '"// expect-compile: ok"', file=sys.stderr)
        return 2
    kind, arg = match.groups()
    if kind == 'compile' and arg != 'ok':
        print(f'{path}: "// expect-compile:" takes only "ok", not {arg!r}', file=sys.stderr)
        return 2
    try:
        pattern = re.compile(arg, re.MULTILINE) if kind != 'compile' else None
    except re.error as e:
        print(f'{path}: bad regex {arg!r}: {e}', file=sys.stderr)
        return 2

    with tempfile.TemporaryDirectory() as tmp:
        if path.suffix == '.cu':
            full = command + ['-c', str(path), '-o', os.path.join(tmp, 'out.o')]
        else:
            full = command + ['-fsyntax-only', str(path)]
        proc = subprocess.run(full, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    output = proc.stdout
    shown = ' '.join(full)

    if kind == 'compile':
        if proc.returncode != 0:
            print(f'FAIL {path.name}: expected to compile, but the compiler failed:\n{shown}\n{output}')
            return 1
        print(f'ok {path.name}: compiles, as expected')
        return 0
    if proc.returncode == 0:
        print(f'FAIL {path.name}: expected a compile error matching {arg!r}, but it compiled:\n{shown}\n{output}')
        return 1
    if not pattern.search(output):
        print(f'FAIL {path.name}: it failed to compile, but no diagnostic matches {arg!r}:\n{shown}\n{output}')
        return 1
    if kind == 'first-error':
        first_error = next((line for line in output.splitlines() if ERROR_LINE.search(line)), '')
        if not pattern.search(first_error):
            print(f'FAIL {path.name}: {arg!r} matches a diagnostic, but not the first error, which is:\n{first_error}\n'
                  f'{shown}\n{output}')
            return 1
        print(f'ok {path.name}: fails to compile, and the first error matches {arg!r}')
        return 0
    print(f'ok {path.name}: fails to compile with a diagnostic matching {arg!r}')
    return 0


def main(argv: list[str]) -> int:
    if len(argv) >= 2 and argv[0] == '--list':
        return list_tests(argv[1], '--cuda' in argv[2:])
    if len(argv) < 3 or argv[1] != '--':
        print(__doc__, file=sys.stderr)
        return 2
    return run_test(pathlib.Path(argv[0]), argv[2:])


if __name__ == '__main__':
    sys.exit(main(sys.argv[1:]))
