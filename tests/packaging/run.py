#!/usr/bin/env python3
"""Packaging test (suite `packaging`): install symm into a temporary prefix, then build and run a small consumer
(consumer/) three ways: (a) Meson through pkg-config, (b) Meson with symm as a subproject (a copy of the source in
subprojects/symm, no wrap file), (c) CMake find_package(symm) + target_link_libraries(... symm::symm).

    run.py --source <symm source dir> --work <scratch dir> --meson <meson command> [--cuda enabled|disabled]
           [--cmake <cmake>] [--pkg-config <pkg-config>]

A missing cmake or pkg-config skips that consumer (tools/setup.sh installs both); anything else that fails, fails.
"""
import argparse
import os
import pathlib
import shlex
import shutil
import subprocess
import sys
import time

HERE = pathlib.Path(__file__).resolve().parent
EXPECTED = 'hello from a consumer'


class StepFailed(Exception):
    pass


def run(cmd, env=None, cwd=None):
    shown = ' '.join(shlex.quote(str(c)) for c in cmd)
    proc = subprocess.run([str(c) for c in cmd], env=env, cwd=cwd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                          text=True)
    if proc.returncode != 0:
        raise StepFailed(f'$ {shown}\n{proc.stdout}\n(exit status {proc.returncode})')
    return proc.stdout


def check_consumer(exe: pathlib.Path, how: str) -> str:
    out = run([exe])
    if EXPECTED not in out:
        raise StepFailed(f'{how}: the consumer ran but printed {out!r}, not {EXPECTED!r}')
    return out.strip()


def copy_source(source: pathlib.Path, dest: pathlib.Path) -> None:
    ignore = shutil.ignore_patterns('.git', 'build', 'build-*', 'builddir', 'subprojects', '__pycache__', '*.pyc')
    shutil.copytree(source, dest, ignore=ignore, symlinks=True)


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument('--source', required=True, type=pathlib.Path)
    ap.add_argument('--work', required=True, type=pathlib.Path)
    ap.add_argument('--meson', required=True, help='the meson command, as one shell-quoted string')
    ap.add_argument('--cuda', default='auto', choices=['enabled', 'disabled', 'auto'])
    ap.add_argument('--cmake', default='')
    ap.add_argument('--pkg-config', default='')
    args = ap.parse_args()
    meson = shlex.split(args.meson)
    work = args.work.resolve()
    shutil.rmtree(work, ignore_errors=True)
    work.mkdir(parents=True)
    prefix = work / 'prefix'
    base_env = {k: v for k, v in os.environ.items() if k not in ('PKG_CONFIG_PATH', 'CMAKE_PREFIX_PATH')}
    base_env.pop('MESON_TEST_ITERATION', None)
    started = time.monotonic()
    results = []

    try:
        # the install: the project configured on its own (no tests, examples or benchmarks, no optimization: only the
        # installed files matter), into a scratch prefix
        run(meson + ['setup', work / 'symm-build', args.source, f'--prefix={prefix}', '-Dtests=false',
                     '-Dexamples=false', '-Dbenchmarks=disabled', f'-Dcuda={args.cuda}', '-Dbuildtype=plain'], env=base_env)
        run(meson + ['install', '-C', work / 'symm-build', '--quiet'], env=base_env)
        pcs = sorted(prefix.rglob('symm.pc'))
        configs = sorted(prefix.rglob('symmConfig.cmake'))
        if not pcs or not configs or not (prefix / 'include' / 'symm' / 'error.hpp').exists():
            raise StepFailed(f'install: expected include/symm/error.hpp, symm.pc and symmConfig.cmake under {prefix}; '
                             f'found .pc {pcs}, CMake config {configs}')
        print(f'installed: {pcs[0].relative_to(prefix)}, {configs[0].relative_to(prefix)}')

        # (a) Meson through pkg-config, against the installed copy only (no fallback possible)
        if args.pkg_config:
            env = dict(base_env, PKG_CONFIG_PATH=str(pcs[0].parent))
            shutil.copytree(HERE / 'consumer', work / 'pkgconfig')
            run(meson + ['setup', work / 'pkgconfig-build', work / 'pkgconfig', '--wrap-mode=nofallback'], env=env)
            run(meson + ['compile', '-C', work / 'pkgconfig-build'], env=env)
            results.append(f'meson + pkg-config: {check_consumer(work / "pkgconfig-build" / "consumer", "pkg-config")}')
        else:
            results.append('meson + pkg-config: SKIPPED (no pkg-config)')

        # (b) Meson with symm as a subproject: a copy of the source in subprojects/symm, no wrap file
        shutil.copytree(HERE / 'consumer', work / 'subproject')
        copy_source(args.source, work / 'subproject' / 'subprojects' / 'symm')
        run(meson + ['setup', work / 'subproject-build', work / 'subproject', '--force-fallback-for=symm',
                     f'-Dsymm:cuda={args.cuda}'], env=base_env)
        run(meson + ['compile', '-C', work / 'subproject-build', 'consumer'], env=base_env)  # not symm's own tools
        results.append(f'meson subproject:   {check_consumer(work / "subproject-build" / "consumer", "subproject")}')

        # (c) CMake: find_package(symm) + target_link_libraries(consumer PRIVATE symm::symm)
        if args.cmake:
            run([args.cmake, '-S', HERE / 'consumer', '-B', work / 'cmake-build', f'-DCMAKE_PREFIX_PATH={prefix}',
                 '-DCMAKE_BUILD_TYPE=Release'], env=base_env)
            run([args.cmake, '--build', work / 'cmake-build'], env=base_env)
            results.append(f'cmake find_package: {check_consumer(work / "cmake-build" / "consumer", "cmake")}')
        else:
            results.append('cmake find_package: SKIPPED (no cmake)')
    except StepFailed as e:
        print('\n'.join(results))
        print(f'FAIL: {e}', file=sys.stderr)
        return 1

    print('\n'.join(results))
    print(f'packaging: ok in {time.monotonic() - started:.1f} s')
    return 0


if __name__ == '__main__':
    sys.exit(main())
