#!/usr/bin/env python3
"""How long symm's put/get programs take to compile, against the same program written with NVSHMEM and with plain
CUDA (issue 42 item 1). Every program is compiled to an object only (-c, no link), -O2, with symm's flags:

    symm_gpu     examples/01_put_get/put_get_gpu.cu                 nvcc
    nvshmem      benchmarks/compile_time/put_get_nvshmem.cu         nvcc -rdc=true, NVSHMEM's headers
    plain_cuda   benchmarks/compile_time/put_get_cuda.cu            nvcc, no communication library
    kernel_only  benchmarks/compile_time/kernel_only.cu             nvcc, one symm kernel and no host code
    symm_host    examples/01_put_get/put_get.cpp                    the C++ compiler

Each program is compiled --reps times, the programs interleaved round by round (round r compiles every program once)
so that a busy minute of the machine slows all of them alike. Printed: the median, min and max wall time of each
program; the ratios symm_gpu/nvshmem, symm_gpu/plain_cuda and kernel_only/plain_cuda, taken round by round (median
and [min-max] of the per-round ratios); put_get.cpp's seconds; and the preprocessed line count of every public header
alone (g++ -E -P), with nvcc -E of symm.hpp (its device pass).

    compile_time.py [--reps N] [--csv FILE] [--max-ratio symm_gpu/nvshmem=6] ...

Without arguments it finds g++, nvcc (PATH, else /usr/local/cuda/bin) and CCCL itself; the Meson test
(tests/tools/meson.build, `meson test --suite tools compile_time`) passes the build's own compilers and flags.
NVSHMEM's headers: --nvshmem-include DIR, else the copy `SYMM_NVSHMEM_HEADERS=1 tools/setup.sh` unpacks into
${SYMM_DEPS_DIR:-${XDG_CACHE_HOME:-~/.cache}/symm}/nvidia-nvshmem-cu13-VERSION, else a pip-installed
nvidia-nvshmem-cu13; without any the NVSHMEM row is skipped and the others still run.
A compile that fails prints the compiler's output and exits 1, naming the program; a --max-ratio bound exceeded exits 1.
Python standard library only.
"""

import argparse
import csv
import importlib.util
import os
import shlex
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

SOURCE_ROOT = Path(__file__).resolve().parent.parent
TWINS = Path(__file__).resolve().parent / 'compile_time'
# The NVSHMEM release symm's benchmarks compare with (meson.build names the same wheel).
NVSHMEM_WHEEL = 'nvidia-nvshmem-cu13'
NVSHMEM_VERSION = '3.4.5'
DEFAULT_CUDA_FLAGS = ['--expt-relaxed-constexpr', '-arch=sm_90']


@dataclass
class Program:
    name: str
    source: Path
    compiler: str  # 'nvcc' or 'cxx'
    extra_flags: list[str] = field(default_factory=list)
    seconds: list[float] = field(default_factory=list)


# 'numerator/denominator' program names, each with the target (None: the issue sets none).
RATIOS = {
    'symm_gpu/nvshmem': 1.0,
    'symm_gpu/plain_cuda': None,
    'kernel_only/plain_cuda': 2.0,
}
HOST_TARGET_SECONDS = 3.0  # issue 42: put_get.cpp compiles in 3 s or less


def deps_dir() -> Path:
    """The per-user cache tools/setup.sh and tools/find-cccl.py use."""
    return Path(os.environ.get('SYMM_DEPS_DIR') or Path(os.environ.get('XDG_CACHE_HOME') or Path.home() / '.cache') /
                'symm')


def setup_nvshmem_include() -> Path:
    return deps_dir() / f'{NVSHMEM_WHEEL}-{NVSHMEM_VERSION}' / 'nvidia' / 'nvshmem' / 'include'


def find_nvshmem_include(given: str | None) -> tuple[Path | None, str]:
    """The directory holding nvshmem.h, or None and why not."""
    if given:
        found = (Path(given) / 'nvshmem.h').is_file()
        return (Path(given), '') if found else (None, f'no nvshmem.h in --nvshmem-include {given}')
    candidates = [setup_nvshmem_include()]
    wheel = importlib.util.find_spec('nvidia.nvshmem') if importlib.util.find_spec('nvidia') else None
    candidates += [Path(p) / 'include' for p in (wheel.submodule_search_locations or [])] if wheel else []
    for include in candidates:
        if (include / 'nvshmem.h').is_file():
            return include, ''
    return None, (f'no NVSHMEM headers: no --nvshmem-include, none in {setup_nvshmem_include()}, no {NVSHMEM_WHEEL} '
                  f'package in this python3. `SYMM_NVSHMEM_HEADERS=1 tools/setup.sh` unpacks them there '
                  f'(include/ only), or pass --nvshmem-include DIR')


def default_nvcc() -> str:
    found = shutil.which('nvcc')
    for root in (os.environ.get('CUDA_HOME'), os.environ.get('CUDA_PATH'), '/usr/local/cuda'):
        if not found and root and os.access(Path(root) / 'bin' / 'nvcc', os.X_OK):
            found = str(Path(root) / 'bin' / 'nvcc')
    return found or ''


def default_symm_flags(nvcc: list[str]) -> list[str]:
    """What tests/meson.build's symm_cxx_flags holds in a default build, found as meson.build finds it."""
    flags = ['-std=c++20', f'-I{SOURCE_ROOT / "include"}']
    if nvcc:
        toolkit = Path(shutil.which(nvcc[0]) or nvcc[0]).resolve().parent.parent
        flags += ['-isystem', str(toolkit / 'include' / 'cccl'), '-isystem', str(toolkit / 'include')]
    else:
        found = subprocess.run([sys.executable, str(SOURCE_ROOT / 'tools' / 'find-cccl.py')], capture_output=True,
                               text=True)
        if found.returncode != 0:
            sys.exit(f'compile_time: no nvcc and no CCCL headers: {found.stderr.strip()}')
        flags += ['-isystem', found.stdout.strip()]
    return flags + ['-DSYMM_CHECK=1', '-DFMT_USE_CONSTEXPR=1', f'-DSYMM_ENABLE_CUDA={1 if nvcc else 0}']


def parse_bounds(specs: list[str], option: str) -> dict[str, float]:
    bounds = {}
    for spec in specs:
        name, _, value = spec.partition('=')
        if name not in RATIOS:
            sys.exit(f'compile_time: {option} {spec}: unknown ratio {name!r}; one of {", ".join(RATIOS)}')
        try:
            bounds[name] = float(value)
        except ValueError:
            sys.exit(f'compile_time: {option} {spec}: the bound must be a number (RATIO=BOUND)')
    return bounds


def compile_once(program: Program, command: list[str], out_dir: str) -> float:
    full = command + ['-O2', '-c', str(program.source), '-o', os.path.join(out_dir, program.name + '.o')]
    start = time.perf_counter()
    try:
        proc = subprocess.run(full, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    except OSError as e:  # no such compiler: say which program needed it, not a traceback
        sys.exit(f'compile_time: {program.name} ({program.source}): cannot run {full[0]}: {e.strerror}')
    elapsed = time.perf_counter() - start
    if proc.returncode != 0:
        print(f'compile_time: {program.name} ({program.source}) failed to compile (exit {proc.returncode}):\n'
              f'{shlex.join(full)}\n{proc.stdout}', file=sys.stderr)
        sys.exit(1)
    return elapsed


def preprocessed_lines(command: list[str], header: str, out_dir: str, suffix: str) -> int:
    """Lines of <symm/HEADER> preprocessed alone, through a file that includes it (no "#pragma once in main file")."""
    probe = os.path.join(out_dir, 'probe' + suffix)
    Path(probe).write_text(f'#include <symm/{header}>\n')
    try:
        proc = subprocess.run(command + [probe], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    except OSError as e:
        sys.exit(f'compile_time: preprocessing <symm/{header}>: cannot run {command[0]}: {e.strerror}')
    if proc.returncode != 0:
        print(f'compile_time: preprocessing <symm/{header}> failed (exit {proc.returncode}):\n{shlex.join(command)} '
              f'{probe}\n{proc.stderr}', file=sys.stderr)
        sys.exit(1)
    return proc.stdout.count('\n')


def per_round_ratios(num: Program, den: Program) -> list[float]:
    return [a / b for a, b in zip(num.seconds, den.seconds)]


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__.split('\n\n')[0], formatter_class=argparse.RawDescriptionHelpFormatter,
        epilog='Flags starting with "-" go with "=": --symm-flag=-std=c++20 --cuda-flag=-arch=sm_90.')
    parser.add_argument('--reps', type=int, default=3, help='compiles of each program (rounds; default 3)')
    parser.add_argument('--cxx', default=os.environ.get('CXX', 'g++'),
                        help='C++ compiler command, split as a shell would (default: $CXX, else g++)')
    parser.add_argument('--nvcc', default=None,
                        help='nvcc command (default: nvcc on PATH, else $CUDA_HOME, $CUDA_PATH, /usr/local/cuda); '
                             'empty: no nvcc, only the host rows')
    parser.add_argument('--symm-flag', action='append', dest='symm_flags', metavar='FLAG',
                        help="one of symm's include and define flags, for every compile (repeat; default: those of a "
                             'default build, as tests/meson.build makes symm_cxx_flags)')
    parser.add_argument('--cuda-flag', action='append', dest='cuda_flags', metavar='FLAG',
                        help=f'one nvcc flag more (repeat; default: {" ".join(DEFAULT_CUDA_FLAGS)})')
    parser.add_argument('--nvshmem-include', metavar='DIR', help='the directory holding nvshmem.h')
    parser.add_argument('--csv', metavar='FILE', help='also write every measurement (per round) to FILE')
    parser.add_argument('--max-ratio', action='append', default=[], metavar='RATIO=BOUND',
                        help=f'fail (exit 1) when the median RATIO is above BOUND; RATIO one of {", ".join(RATIOS)}; '
                             'a ratio whose programs did not run is not checked')
    parser.add_argument('--fallback-max-ratio', action='append', default=[], metavar='RATIO=BOUND',
                        help='checked only when some --max-ratio could not be (e.g. no NVSHMEM headers)')
    parser.add_argument('--skip-headers', action='store_true', help='no preprocessed line counts')
    args = parser.parse_args()
    if args.reps < 1:
        parser.error('--reps must be at least 1')
    bounds = parse_bounds(args.max_ratio, '--max-ratio')
    fallback_bounds = parse_bounds(args.fallback_max_ratio, '--fallback-max-ratio')

    cxx = shlex.split(args.cxx)
    nvcc = shlex.split(default_nvcc() if args.nvcc is None else args.nvcc)
    symm_flags = args.symm_flags if args.symm_flags is not None else default_symm_flags(nvcc)
    cuda_flags = args.cuda_flags if args.cuda_flags is not None else DEFAULT_CUDA_FLAGS
    commands = {'cxx': cxx + symm_flags, 'nvcc': nvcc + symm_flags + cuda_flags}

    examples = SOURCE_ROOT / 'examples' / '01_put_get'
    programs: list[Program] = []
    skipped: list[str] = []
    if nvcc:
        programs.append(Program('symm_gpu', examples / 'put_get_gpu.cu', 'nvcc'))
        nvshmem_include, why = find_nvshmem_include(args.nvshmem_include)
        if nvshmem_include:
            programs.append(Program('nvshmem', TWINS / 'put_get_nvshmem.cu', 'nvcc',
                                    ['-rdc=true', '-isystem', str(nvshmem_include)]))
        else:
            skipped.append(f'nvshmem: skipped: {why}')
        programs.append(Program('plain_cuda', TWINS / 'put_get_cuda.cu', 'nvcc'))
        programs.append(Program('kernel_only', TWINS / 'kernel_only.cu', 'nvcc'))
    else:
        skipped.append('symm_gpu, nvshmem, plain_cuda, kernel_only: skipped: no nvcc (this build has no CUDA backend, '
                       'or none was found; --nvcc CMD names one)')
    programs.append(Program('symm_host', examples / 'put_get.cpp', 'cxx'))

    started = time.perf_counter()
    load_before = os.getloadavg()[0]
    for line in skipped:
        print(line)
    with tempfile.TemporaryDirectory(prefix='symm-compile-time-') as out_dir:
        for round_no in range(1, args.reps + 1):
            for program in programs:
                program.seconds.append(compile_once(program, commands[program.compiler] + program.extra_flags,
                                                    out_dir))
            print(f'round {round_no}/{args.reps}: ' +
                  ', '.join(f'{p.name} {p.seconds[-1]:.2f} s' for p in programs), flush=True)
        header_lines: list[tuple[str, int]] = []
        nvcc_symm_lines = None
        if not args.skip_headers:
            for header in sorted(p.name for p in (SOURCE_ROOT / 'include' / 'symm').glob('*.hpp')):
                lines = preprocessed_lines(cxx + symm_flags + ['-E', '-P'], header, out_dir, '.cpp')
                header_lines.append((header, lines))
            header_lines.sort(key=lambda item: (-item[1], item[0]))
            if nvcc:
                nvcc_symm_lines = preprocessed_lines(nvcc + symm_flags + cuda_flags + ['-E', '-Xcompiler=-P'],
                                                     'symm.hpp', out_dir, '.cu')
    load_after = os.getloadavg()[0]

    by_name = {p.name: p for p in programs}
    print()
    print(f'compile time: {args.reps} round(s), wall seconds per compile (-c -O2, object only); '
          f'{os.cpu_count()} CPUs, load average {load_before:.2f} at start, {load_after:.2f} at end')
    width = max(len(str(p.source.relative_to(SOURCE_ROOT))) for p in programs)
    print(f'{"program":<12} {"source":<{width}}  {"median":>7} {"min":>7} {"max":>7}')
    for p in programs:
        print(f'{p.name:<12} {str(p.source.relative_to(SOURCE_ROOT)):<{width}}  {statistics.median(p.seconds):7.2f} '
              f'{min(p.seconds):7.2f} {max(p.seconds):7.2f}')

    print()
    print(f'{"ratio (per round)":<24} {"median":>7} {"[min-max]":<15} issue 42 target')
    ratio_rows: dict[str, list[float]] = {}
    for name, target in RATIOS.items():
        num, den = name.split('/')
        if num not in by_name or den not in by_name:
            print(f'{name:<24} {"-":>7} {"":<15} not measured: {", ".join(n for n in (num, den) if n not in by_name)}'
                  ' did not run')
            continue
        ratios = ratio_rows[name] = per_round_ratios(by_name[num], by_name[den])
        median = statistics.median(ratios)
        verdict = '' if target is None else f'<= {target:.1f}x: {"met" if median <= target else "missed"}'
        print(f'{name:<24} {median:6.2f}x {f"[{min(ratios):.2f}-{max(ratios):.2f}]":<15} {verdict}'.rstrip())
    host_median = statistics.median(by_name['symm_host'].seconds)
    print(f'{"put_get.cpp seconds":<24} {host_median:6.2f}s {"":<15} <= {HOST_TARGET_SECONDS:.0f} s: '
          f'{"met" if host_median <= HOST_TARGET_SECONDS else "missed"}')

    if header_lines:
        print()
        print("preprocessed lines of each public header alone (g++ -E -P, symm's flags)")
        for header, lines in header_lines:
            print(f'  {header:<20} {lines:>8}')
        if nvcc_symm_lines is not None:
            print(f'  {"symm.hpp, nvcc -E":<20} {nvcc_symm_lines:>8}   (nvcc\'s device pass, with cuda_runtime.h)')

    if args.csv:
        with open(args.csv, 'w', newline='') as f:
            writer = csv.writer(f)
            writer.writerow(['section', 'name', 'round', 'value', 'unit'])
            for p in programs:
                writer.writerows(['compile', p.name, r, f'{s:.3f}', 's'] for r, s in enumerate(p.seconds, 1))
            for name, ratios in ratio_rows.items():
                writer.writerows(['ratio', name, r, f'{x:.3f}', 'x'] for r, x in enumerate(ratios, 1))
            writer.writerows(['header_lines', h, '', n, 'lines'] for h, n in header_lines)
            if nvcc_symm_lines is not None:
                writer.writerow(['header_lines', 'symm.hpp (nvcc -E)', '', nvcc_symm_lines, 'lines'])
        print(f'\nwrote {args.csv}')

    # The regression guard: when a bound's ratio was not measured (no NVSHMEM headers), the fallback bounds apply.
    failed = False
    guards = list(bounds.items())
    if any(name not in ratio_rows for name in bounds):
        guards += list(fallback_bounds.items())
    if guards:
        print()
    for name, bound in guards:
        if name not in ratio_rows:
            fallback = [n for n in fallback_bounds if n != name] if name in bounds else []
            print(f'guard {name} <= {bound:g}x: not checked, not measured' +
                  (f' (falling back to {", ".join(fallback)})' if fallback else ''))
            continue
        median = statistics.median(ratio_rows[name])
        ok = median <= bound
        failed |= not ok
        print(f'guard {name} <= {bound:g}x: median {median:.2f}x: {"ok" if ok else "FAILED"}')
    print(f'\ntook {time.perf_counter() - started:.0f} s')
    return 1 if failed else 0


if __name__ == '__main__':
    sys.exit(main())
