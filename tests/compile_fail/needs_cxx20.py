#!/usr/bin/env python3
"""Suite `compile`: every public header, included alone by a C++17 build, stops at symm's one-line "symm needs C++20"
error (config.hpp) instead of the hundreds of errors its C++20 code would give.

    needs_cxx20.py <include dir> -- <compiler> <flags>...   (the harness puts -std=c++17 in place of any -std)
"""
import os
import pathlib
import re
import subprocess
import sys
import tempfile

OURS = 'symm needs C++20: compile with -std=c++20'
ERROR_LINE = re.compile(r':\s*(fatal )?error\b')  # a diagnostic ("file:6:4: error: ..."), not a path with "error"
# Plain macros, meant to be usable from any C++ (a C++17 program may check symm's version): compiles in C++17.
ANY_CXX = {'version.hpp'}


def main() -> int:
    include_dir = pathlib.Path(sys.argv[1])
    command = [a for a in sys.argv[sys.argv.index('--') + 1:] if not a.startswith('-std=')]  # nvcc takes one -std
    nvcc = os.path.basename(command[0]).startswith('nvcc')
    headers = sorted(p.name for p in (include_dir / 'symm').glob('*.hpp') if p.name not in ANY_CXX)
    failed = []
    with tempfile.TemporaryDirectory() as tmp:
        for h in headers:
            src = pathlib.Path(tmp) / ('use.cu' if nvcc else 'use.cpp')
            src.write_text(f'#include <symm/{h}>\nint main() {{}}\n')
            step = ['-c', str(src), '-o', os.path.join(tmp, 'use.o')] if nvcc else ['-fsyntax-only', str(src)]
            proc = subprocess.run(command + ['-std=c++17'] + step, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                                  text=True)
            errors = [line for line in proc.stdout.splitlines() if ERROR_LINE.search(line)]
            # Ours, then the fatal missing include that stops the compiler (nvcc may add its own closing count).
            if proc.returncode == 0 or not errors or OURS not in errors[0] or len(errors) > 3:
                failed.append(f'<symm/{h}>: exit {proc.returncode}, {len(errors)} error lines, first: '
                              f'{errors[0] if errors else "none"}')
    for f in failed:
        print('FAIL', f)
    print(f'{len(headers) - len(failed)} of {len(headers)} public headers stop a C++17 build at "{OURS}"')
    return 1 if failed or not headers else 0


if __name__ == '__main__':
    sys.exit(main())
