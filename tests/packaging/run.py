#!/usr/bin/env python3
"""Packaging test (suite `packaging`): install symm into a temporary prefix, then build a small consumer
(consumer/: a put, a barrier and an allreduce) and run it with 2 PEs under the installed symmrun, in these ways:
(a) Meson through pkg-config, (b) Meson with symm as a subproject (a copy of the source in subprojects/symm, no wrap
file, no options: symm must add no tests, no targets but symmrun, not install symmrun, not look for Catch2),
(c) CMake find_package(symm) + target_link_libraries(... symm::symm), with a .cu source when nvcc is given, and
(d) nvcc with `pkg-config --cflags --libs symm` when nvcc and pkg-config are given.

    run.py --source <symm source dir> --work <scratch dir> --meson <meson command> [--cuda enabled|disabled]
           [--cmake <cmake>] [--pkg-config <pkg-config>] [--nvcc <nvcc>] [--gpu-arch sm_90]

A missing cmake, pkg-config or nvcc skips what needs it (tools/setup.sh installs the first two); anything else that
fails, fails.
"""
import argparse
import json
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


def check_consumer(symmrun: pathlib.Path, exe: pathlib.Path, how: str) -> str:
    """Runs `exe` with 2 PEs under the installed symmrun: both PEs must say hello and ok."""
    return check_output(run([symmrun, '-n', '2', exe]), how)


def check_output(out: str, how: str) -> str:
    """The output of a consumer run with 2 PEs: both PEs said hello and ok. Returns the first PE's line."""
    lines = [line for line in out.splitlines() if EXPECTED in line]
    if len(lines) != 2 or not all(line.endswith(': ok') for line in lines):
        raise StepFailed(f'{how}: the consumer ran but printed {out!r}, not two lines "{EXPECTED} ...: ok"')
    return lines[0]


def check_subproject_is_the_library_alone(meson, build: pathlib.Path, env) -> None:
    """symm as a subproject without options: no tests registered, no target but symmrun, symmrun not installed, and
    Catch2 never looked for."""
    tests = json.loads(run(meson + ['introspect', '--tests', build], env=env))
    targets = {t['name'] for t in json.loads(run(meson + ['introspect', '--targets', build], env=env))}
    installed = json.loads(run(meson + ['introspect', '--installed', build], env=env))
    log = (build / 'meson-logs' / 'meson-log.txt').read_text(errors='replace')
    problems = []
    if tests:
        problems.append(f'{len(tests)} tests registered (e.g. {tests[0]["name"]})')
    if targets - {'consumer', 'symmrun'}:
        problems.append(f'targets besides the consumer and symmrun: {sorted(targets - {"consumer", "symmrun"})[:5]}')
    # The headers and package files install as with any subproject (meson install --skip-subprojects leaves them);
    # the launcher is the consumer's choice.
    if any(os.path.basename(path) == 'symmrun' for path in installed.values()):
        problems.append('installs symmrun')
    if 'catch2' in log.lower():
        problems.append('looked for Catch2')
    if problems:
        raise StepFailed('symm as a subproject without options: ' + '; '.join(problems))


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
    ap.add_argument('--nvcc', default='')
    ap.add_argument('--gpu-arch', default='sm_90')
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
        run(meson + ['setup', work / 'symm-build', args.source, f'--prefix={prefix}', '-Dtests=disabled',
                     '-Dexamples=disabled', '-Dbenchmarks=disabled', f'-Dcuda={args.cuda}', '-Dbuildtype=plain'],
            env=base_env)
        run(meson + ['install', '-C', work / 'symm-build', '--quiet'], env=base_env)
        pcs = sorted(prefix.rglob('symm.pc'))
        configs = sorted(prefix.rglob('symmConfig.cmake'))
        symmrun = prefix / 'bin' / 'symmrun'
        if not pcs or not configs or not (prefix / 'include' / 'symm' / 'error.hpp').exists() or not symmrun.exists():
            raise StepFailed(f'install: expected include/symm/error.hpp, symm.pc, symmConfig.cmake and bin/symmrun '
                             f'under {prefix}; found .pc {pcs}, CMake config {configs}, symmrun {symmrun.exists()}')
        print(f'installed: {pcs[0].relative_to(prefix)}, {configs[0].relative_to(prefix)}, bin/symmrun')

        # (a) Meson through pkg-config, against the installed copy only (no fallback possible)
        if args.pkg_config:
            env = dict(base_env, PKG_CONFIG_PATH=str(pcs[0].parent))
            shutil.copytree(HERE / 'consumer', work / 'pkgconfig')
            run(meson + ['setup', work / 'pkgconfig-build', work / 'pkgconfig', '--wrap-mode=nofallback'], env=env)
            run(meson + ['compile', '-C', work / 'pkgconfig-build'], env=env)
            results.append(f'meson + pkg-config: '
                           f'{check_consumer(symmrun, work / "pkgconfig-build" / "consumer", "pkg-config")}')
        else:
            results.append('meson + pkg-config: SKIPPED (no pkg-config)')

        # (b) Meson with symm as a subproject: a copy of the source in subprojects/symm, no wrap file
        shutil.copytree(HERE / 'consumer', work / 'subproject')
        copy_source(args.source, work / 'subproject' / 'subprojects' / 'symm')
        sub = work / 'subproject-build'
        run(meson + ['setup', sub, work / 'subproject', '--force-fallback-for=symm', f'-Dsymm:cuda={args.cuda}'],
            env=base_env)
        check_subproject_is_the_library_alone(meson, sub, base_env)
        run(meson + ['compile', '-C', sub, 'consumer'], env=base_env)
        results.append(f'meson subproject:   {check_consumer(symmrun, sub / "consumer", "subproject")}')

        # (c) CMake: find_package(symm) + target_link_libraries(consumer PRIVATE symm::symm)
        if args.cmake:
            cuda = [f'-DCMAKE_CUDA_COMPILER={args.nvcc}', '-DCONSUMER_CUDA=ON',
                    f'-DCMAKE_CUDA_ARCHITECTURES={args.gpu_arch.removeprefix("sm_")}'] if args.nvcc else []
            run([args.cmake, '-S', HERE / 'consumer', '-B', work / 'cmake-build', f'-DCMAKE_PREFIX_PATH={prefix}',
                 '-DCMAKE_BUILD_TYPE=Release'] + cuda, env=base_env)
            run([args.cmake, '--build', work / 'cmake-build'], env=base_env)
            results.append(f'cmake find_package: {check_consumer(symmrun, work / "cmake-build" / "consumer", "cmake")}')
            if args.nvcc:
                results.append('cmake, .cu source: '
                               f'{check_consumer(symmrun, work / "cmake-build" / "consumer_cuda", "cmake .cu")}')
            else:
                results.append('cmake, .cu source: SKIPPED (no nvcc)')
        else:
            results.append('cmake find_package: SKIPPED (no cmake)')

        # (d) nvcc with pkg-config's line, as the README shows it
        if args.nvcc and args.pkg_config:
            env = dict(base_env, PKG_CONFIG_PATH=str(pcs[0].parent))
            flags = shlex.split(run([args.pkg_config, '--cflags', '--libs', 'symm'], env=env))
            exe = work / 'nvcc-consumer'
            run([args.nvcc, '-std=c++20', f'-arch={args.gpu_arch}', HERE / 'consumer' / 'kernel.cu'] + flags +
                ['-o', exe], env=env)
            results.append(f'nvcc + pkg-config:  {check_consumer(symmrun, exe, "nvcc + pkg-config")}')
        else:
            results.append('nvcc + pkg-config:  SKIPPED (no nvcc or no pkg-config)')
    except StepFailed as e:
        print('\n'.join(results))
        print(f'FAIL: {e}', file=sys.stderr)
        return 1

    print('\n'.join(results))
    print(f'packaging: ok in {time.monotonic() - started:.1f} s')
    return 0


if __name__ == '__main__':
    sys.exit(main())
