#!/usr/bin/env python3
"""Packaging test `readme-commands` (suite `packaging`): README.md's install and consumer commands, run as written.

The ```sh block after `<!-- ci: readme-install -->` in README.md ("Using symm in a project") runs with bash from the
root of a scratch copy of the source (as from the repository root after tools/quickstart.sh), with consumer/main.cpp
as prog.cpp and consumer/kernel.cu as prog.cu (a put, a barrier and an allreduce; each PE says hello and ok). One
thing is substituted: "$HOME/.local" becomes "$SYMM_README_PREFIX", a scratch prefix (HOME itself stays: Python's
user site, where pip --user puts meson, and the CCCL that tools/setup.sh fetches are found through it). `meson` on
PATH is the Meson that configured this build, and nvcc's folder leads PATH when nvcc is given. Two passes of the
block's lines, verbatim:
  1. all but the nvcc line: the install, the g++ line, and symmrun (the installed one) running prog with 2 PEs;
  2. with nvcc only: all but the install (`meson ...`) lines and the g++ line: the nvcc line, and symmrun again.
docs/guide.md's block after its `<!-- ci: readme-install ...` line must have the README's `meson` and `export` lines.

    readme_commands.py --source <symm source dir> --work <scratch dir> --meson <meson command>
                       [--pkg-config <pkg-config>] [--nvcc <nvcc>]

Without pkg-config (the README's consumer line needs it) the test is skipped (exit 77).
"""
import argparse
import os
import pathlib
import shlex
import shutil
import subprocess
import sys
import time

sys.dont_write_bytecode = True  # importing run.py must leave no __pycache__ in the source tree
from run import HERE, StepFailed, check_output, copy_source  # noqa: E402

MARKER = '<!-- ci: readme-install'
HOME_PREFIX = '$HOME/.local'


def marked_block(doc: pathlib.Path) -> list[str]:
    """The lines of the ```sh block right after the one line starting with MARKER."""
    lines = doc.read_text().splitlines()
    marks = [i for i, line in enumerate(lines) if line.startswith(MARKER)]
    if len(marks) != 1:
        raise StepFailed(f'{doc}: {len(marks)} lines start with "{MARKER}", not one')
    i = marks[0] + 1
    if i >= len(lines) or lines[i].strip() != '```sh':
        raise StepFailed(f'{doc}:{i + 1}: the line after "{MARKER}" is not a ```sh fence')
    end = next((j for j in range(i + 1, len(lines)) if lines[j].strip() == '```'), None)
    if end is None:
        raise StepFailed(f'{doc}:{i + 1}: the ```sh block after "{MARKER}" never ends')
    return [line for line in lines[i + 1:end] if line.strip() and not line.lstrip().startswith('#')]


def first_word(line: str) -> str:
    return line.split(maxsplit=1)[0]


def without_comment(line: str) -> str:
    return line.split('  #', 1)[0].rstrip()


def run_pass(name: str, lines: list[str], cwd: pathlib.Path, env, prefix: pathlib.Path) -> str:
    """Runs `lines` as one bash script (set -euxo pipefail) in cwd, "$HOME/.local" replaced by "$SYMM_README_PREFIX"
    (= prefix: quoting stays as written); returns what it printed."""
    script = cwd / f'readme-{name}.sh'
    body = '\n'.join(line.replace(HOME_PREFIX, '$SYMM_README_PREFIX') for line in lines)
    script.write_text(f'set -euxo pipefail\n{body}\n')
    proc = subprocess.run(['bash', script], cwd=cwd, env=dict(env, SYMM_README_PREFIX=str(prefix)),
                          stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    if proc.returncode != 0:
        raise StepFailed(f'pass {name}: bash {script} (the README lines below) exited {proc.returncode}:\n{body}\n'
                         f'--- output ---\n{proc.stdout}')
    return proc.stdout


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument('--source', required=True, type=pathlib.Path)
    ap.add_argument('--work', required=True, type=pathlib.Path)
    ap.add_argument('--meson', required=True, help='the meson command, as one shell-quoted string')
    ap.add_argument('--pkg-config', default='')
    ap.add_argument('--nvcc', default='')
    args = ap.parse_args()
    if not args.pkg_config:
        print('SKIP: no pkg-config, which the README\'s consumer lines use (tools/setup.sh installs it)')
        return 77
    started = time.monotonic()
    source = args.source.resolve()
    work = args.work.resolve()
    shutil.rmtree(work, ignore_errors=True)
    work.mkdir(parents=True)
    try:
        block = marked_block(source / 'README.md')
        kinds = [first_word(line) for line in block]
        for needed in ('meson', 'export', 'g++', 'nvcc', 'symmrun'):
            if needed not in kinds:
                raise StepFailed(f'README.md: the install block has no `{needed}` line: {block}')
        if kinds.count('nvcc') != 1 or kinds.count('g++') != 1 or kinds[-1] != 'symmrun':
            raise StepFailed(f'README.md: expected one g++ line, one nvcc line and symmrun last: {block}')
        if not any(HOME_PREFIX in line for line in block):
            raise StepFailed(f'README.md: the install block no longer names {HOME_PREFIX}, which the test replaces')

        # docs/guide.md shows the same install: its meson and export lines are the README's
        readme_install = [without_comment(line) for line in block if first_word(line) in ('meson', 'export')]
        guide = marked_block(source / 'docs' / 'guide.md')
        guide_install = [without_comment(line) for line in guide if first_word(line) in ('meson', 'export')]
        if guide_install != readme_install:
            raise StepFailed(f'docs/guide.md\'s install lines {guide_install} are not README.md\'s {readme_install}')

        # the repository root after quickstart: a copy of the source (no build folders), prog.cpp and prog.cu
        root = work / 'symm'
        copy_source(source, root)
        shutil.copy(HERE / 'consumer' / 'main.cpp', root / 'prog.cpp')
        shutil.copy(HERE / 'consumer' / 'kernel.cu', root / 'prog.cu')
        prefix = work / 'prefix'

        # PATH: `meson` is this build's Meson, `pkg-config` the one found, then nvcc's own folder (a copy or link of
        # nvcc elsewhere would move the toolkit root Meson derives from it)
        shim = work / 'bin'
        shim.mkdir()
        meson = shlex.split(args.meson)
        meson[0] = shutil.which(meson[0]) or meson[0]  # a bare name would find the shim itself
        (shim / 'meson').write_text('#!/bin/sh\nexec ' + ' '.join(shlex.quote(c) for c in meson) + ' "$@"\n')
        (shim / 'meson').chmod(0o755)
        (shim / 'pkg-config').symlink_to(args.pkg_config)
        path = [str(shim)] + ([os.path.dirname(args.nvcc)] if args.nvcc else []) + [os.environ.get('PATH', '')]
        env = {k: v for k, v in os.environ.items() if k not in ('PKG_CONFIG_PATH', 'MESON_TEST_ITERATION')}
        env['PATH'] = os.pathsep.join(path)

        results = []
        out = run_pass('gxx', [line for line in block if first_word(line) != 'nvcc'], root, env, prefix)
        if not (prefix / 'bin' / 'symmrun').is_file() or not list(prefix.rglob('symm.pc')):
            raise StepFailed(f'the README\'s install left no bin/symmrun or symm.pc under {prefix}:\n{out}')
        results.append(f'README, install + g++:  {check_output(out, "README g++ line")}')
        if args.nvcc:
            out = run_pass('nvcc', [line for line in block if first_word(line) not in ('meson', 'g++')], root, env,
                           prefix)
            results.append(f'README, nvcc:           {check_output(out, "README nvcc line")}')
        else:
            results.append('README, nvcc:           SKIPPED (no nvcc)')
    except StepFailed as e:
        print(f'FAIL: {e}', file=sys.stderr)
        return 1
    print('README.md, "Using symm in a project", run as written ($HOME/.local -> the scratch prefix):')
    print('\n'.join('  ' + line for line in block))
    print('\n'.join(results))
    print(f'readme-commands: ok in {time.monotonic() - started:.1f} s')
    return 0


if __name__ == '__main__':
    sys.exit(main())
