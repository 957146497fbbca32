#!/usr/bin/env python3
"""tools/check-includes.py: every target compiles with the include directories its build gives it, nothing more.

usage: check-includes.py BUILD_DIR [--exclude DIR]... [--forbid DIR]... [--syntax-only] [--jobs N] [--list]

Re-runs the compile command of every translation unit in BUILD_DIR/compile_commands.json (g++/clang++ and nvcc)
with the compiler's default include directories minus the excluded ones (default: /usr/local/include, where some
machines link every CUDA toolkit header, so that a target that forgot CCCL's include directory still compiles
there): `-nostdinc -nostdinc++` and the remaining defaults, in their order, as -isystem. By default each command
only preprocesses (-M: every #include is resolved, nothing is compiled, and the headers it found are listed);
--syntax-only runs -fsyntax-only on host translation units instead (slower: it parses every template). nvcc is checked
by preprocessing (it has no -fsyntax-only): its host compiler gets -nostdinc through -Xcompiler, and nvcc keeps the
include directories of its own toolkit.

--forbid DIR: fail when a header a host translation unit includes lies under DIR (symlinks resolved); e.g. the CUDA
toolkit in a build that must not use it. --list prints every checked target.

Exit status: 0 when every translation unit passes; 1 when some fail, each named with its target, source file and
the header not found (or found in a forbidden place), with the command that shows it; 2 on bad usage.
"""

from __future__ import annotations

import argparse
import concurrent.futures
import json
import os
import re
import shlex
import subprocess
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path

# Arguments that only name outputs (and their values): the check writes its own.
OUTPUT_FLAGS_WITH_VALUE = {'-o', '-MF', '-MT', '-MQ', '--dependency-output', '--output-file'}
OUTPUT_FLAGS = {'-c', '-MD', '-MMD', '--compile', '--generate-dependencies-with-compile'}
NOT_FOUND = re.compile(r'^(?P<where>[^\s:]+:\d+(?::\d+)?): fatal error: (?P<header>.+?): No such file or directory',
                       re.MULTILINE)


@dataclass
class Result:
    target: str
    source: str
    ok: bool
    message: str = ''


def default_include_dirs(compiler: str) -> list[str]:
    """The directories `compiler` searches for #include <...> by default, in order (g++ -E -Wp,-v)."""
    done = subprocess.run([compiler, '-E', '-Wp,-v', '-x', 'c++', '-'], input='', capture_output=True, text=True)
    dirs, inside = [], False
    for line in done.stderr.splitlines():
        if line.startswith('#include <...> search starts here:'):
            inside = True
        elif line.startswith('End of search list.'):
            break
        elif inside:
            dirs.append(os.path.normpath(line.strip().removesuffix(' (framework directory)')))
    if not dirs:
        sys.exit(f'check-includes: could not read the default include directories of {compiler} '
                 f'(`{compiler} -E -Wp,-v -x c++ -` printed no search list):\n{done.stderr}')
    return dirs


def target_of(entry: dict) -> str:
    """Meson puts a target's objects in <dir>/<target>.p/: the target's name, else the output file."""
    output = entry.get('output', '')
    for part in reversed(Path(output).parts[:-1]):
        if part.endswith('.p'):
            return part[:-2]
    return output or entry['file']


def host_compiler_of_nvcc(argv: list[str]) -> str:
    for i, arg in enumerate(argv):
        if arg in ('-ccbin', '--compiler-bindir') and i + 1 < len(argv):
            return argv[i + 1]
        for prefix in ('-ccbin=', '--compiler-bindir='):
            if arg.startswith(prefix):
                return arg[len(prefix):]
    return 'g++'


def command_of(entry: dict) -> tuple[list[str], bool, str]:
    """An entry's argv, whether it is an nvcc command, and the host compiler whose default directories apply."""
    argv = shlex.split(entry['command']) if 'command' in entry else list(entry['arguments'])
    is_nvcc = Path(argv[0]).name == 'nvcc'
    return argv, is_nvcc, host_compiler_of_nvcc(argv) if is_nvcc else argv[0]


def strip_outputs(argv: list[str]) -> list[str]:
    kept, skip = [], False
    for arg in argv:
        if skip:
            skip = False
        elif arg in OUTPUT_FLAGS_WITH_VALUE:
            skip = True
        elif arg in OUTPUT_FLAGS or any(arg.startswith(f + '=') for f in OUTPUT_FLAGS_WITH_VALUE):
            pass
        else:
            kept.append(arg)
    return kept


def under(path: str, roots: list[str]) -> str | None:
    real = os.path.realpath(path)
    for root in roots:
        if real == root or real.startswith(root + os.sep):
            return root
    return None


def check(entry: dict, args, defaults: dict[str, list[str]], forbidden: list[str]) -> Result:
    argv, is_nvcc, host = command_of(entry)
    target, source = target_of(entry), entry['file']
    kept_dirs = [d for d in defaults[host] if os.path.normpath(d) not in args.exclude]
    with tempfile.TemporaryDirectory(prefix='symm-check-includes-') as scratch:
        deps = os.path.join(scratch, 'deps.d')
        cmd = strip_outputs(argv)
        if is_nvcc:
            # nvcc has no -fsyntax-only: its translation units are always preprocessed (-M), host and device passes
            cmd += ['-Xcompiler=-nostdinc,-nostdinc++,-fdiagnostics-color=never']
            cmd += [f'-isystem={d}' for d in kept_dirs] + ['-M', '-o', deps]
        else:
            cmd += ['-fdiagnostics-color=never', '-nostdinc', '-nostdinc++']
            cmd += [x for d in kept_dirs for x in ('-isystem', d)]
            cmd += ['-fsyntax-only', '-MD', '-MF', deps] if args.syntax_only else ['-M', '-MF', deps]
        done = subprocess.run(cmd, cwd=entry['directory'], capture_output=True, text=True)
        shown = ' '.join(shlex.quote(c) for c in cmd)
        if done.returncode != 0:
            missing = NOT_FOUND.search(done.stderr)
            if missing:
                why = (f"header <{missing['header']}> not found (included at {missing['where']}) with the compiler's "
                       f"default include directories minus {', '.join(sorted(args.exclude))}: the target's build "
                       f"must give it that header's include directory")
            else:
                why = 'the compile command failed:\n' + '\n'.join('    ' + l for l in done.stderr.splitlines()[-20:])
            return Result(target, source, False, f'{why}\n  in {entry["directory"]}: {shown}')
        bad = []
        if forbidden and os.path.exists(deps):
            text = open(deps).read().replace('\\\n', ' ')
            headers = text.split(':', 1)[1].split() if ':' in text else []
            for header in headers:
                path = os.path.join(entry['directory'], header)
                root = under(path, forbidden)
                # nvcc's own toolkit headers come with nvcc: only a host compile may not reach a forbidden place
                if root and not is_nvcc:
                    bad.append(f'{header} (under {root})')
        if bad:
            return Result(target, source, False,
                          f'{len(bad)} header(s) found in a forbidden place, first: {bad[0]}\n'
                          f'  in {entry["directory"]}: {shown}')
    return Result(target, source, True)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split('\n\n')[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument('build_dir', type=Path)
    ap.add_argument('--exclude', action='append', default=None,
                    help='a default include directory to leave out (repeatable; default /usr/local/include)')
    ap.add_argument('--forbid', action='append', default=[], help='no host header may come from under DIR')
    ap.add_argument('--syntax-only', action='store_true', help='-fsyntax-only instead of preprocessing')
    ap.add_argument('--jobs', type=int, default=os.cpu_count() or 1)
    ap.add_argument('--list', action='store_true', help='print every checked target')
    args = ap.parse_args()
    args.exclude = {os.path.normpath(d) for d in (args.exclude or ['/usr/local/include'])}
    forbidden = [os.path.realpath(d) for d in args.forbid if os.path.exists(d)]

    database = args.build_dir / 'compile_commands.json'
    if not database.is_file():
        print(f'check-includes: no {database} (configure the build with Meson first)', file=sys.stderr)
        return 2
    entries = json.loads(database.read_text())
    defaults: dict[str, list[str]] = {}
    # The default directories are read once per compiler, before the workers start.
    commands = [command_of(entry) for entry in entries]
    for _, _, host in commands:
        if host not in defaults:
            defaults[host] = default_include_dirs(host)
    with concurrent.futures.ThreadPoolExecutor(max_workers=max(1, args.jobs)) as pool:
        results = list(pool.map(lambda e: check(e, args, defaults, forbidden), entries))

    failed = [r for r in results if not r.ok]
    for r in results:
        if not r.ok:
            print(f'check-includes: FAILED: target {r.target} ({r.source}): {r.message}', flush=True)
        elif args.list:
            print(f'check-includes: ok: target {r.target} ({r.source})')
    n_nvcc = sum(1 for _, is_nvcc, _ in commands if is_nvcc)
    mode = '-fsyntax-only' if args.syntax_only else 'preprocessing (-M)'
    print(f'check-includes: {len(results) - len(failed)} of {len(results)} translation units pass ({n_nvcc} nvcc, '
          f'{len(results) - n_nvcc} host) by {mode}, without {", ".join(sorted(args.exclude))}'
          + (f', no host header from {", ".join(forbidden)}' if forbidden else ''))
    return 1 if failed else 0


if __name__ == '__main__':
    sys.exit(main())
