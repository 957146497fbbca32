#!/usr/bin/env python3
"""The headers a file of kernels includes stay clear of the host runtime (issue 42).

    check_kernel_headers.py -- <compiler> <flags>...

Preprocesses, with the given compiler and flags (g++, or nvcc), a translation unit that
includes every header device code needs (KERNEL_HEADERS below) and lists the headers it pulled in (-M). Fails, naming
each, when one of the runtime's headers (RUNTIME_HEADERS) is among them: those are what made a kernel-only file take
as long to compile as a whole symm program (detail/world_state.hpp: the bootstrap, the heaps, the coordination). The
views reach the runtime through detail/world_interface.hpp instead.
"""
import pathlib
import subprocess
import sys
import tempfile

# What a translation unit of kernels includes: the views, the remote proxies and device put/get.
KERNEL_HEADERS = ['symm/array_ref.hpp', 'symm/pe_ref.hpp', 'symm/pe_span.hpp', 'symm/remote.hpp', 'symm/rma.hpp',
                  'symm/mdarray_ref.hpp', 'symm/md_rma.hpp']
# The host runtime: none of these may be reached from KERNEL_HEADERS.
RUNTIME_HEADERS = ['symm/detail/world_state.hpp', 'symm/detail/bootstrap/bootstrap.hpp',
                   'symm/detail/net_coordination.hpp', 'symm/detail/control_segment.hpp',
                   'symm/detail/backend/cuda/cuda_heap.hpp', 'symm/detail/job_layout.hpp', 'symm/world.hpp']


def main() -> int:
    args = sys.argv[1:]
    if '--' not in args or args.index('--') + 1 >= len(args):
        print(__doc__, file=sys.stderr)
        return 2
    command = args[args.index('--') + 1:]
    nvcc = pathlib.Path(command[0]).name.startswith('nvcc')
    with tempfile.TemporaryDirectory() as tmp:
        tu = pathlib.Path(tmp) / ('kernels.cu' if nvcc else 'kernels.cpp')
        tu.write_text(''.join(f'#include <{h}>\n' for h in KERNEL_HEADERS))
        depfile = pathlib.Path(tmp) / 'kernels.d'
        # -M lists every header found (nvcc: as its host pass sees them; symm's headers choose by __CUDACC__, not
        # __CUDA_ARCH__, so the device pass includes the same ones).
        flags = ['-M', str(tu), '-o', str(depfile)]
        done = subprocess.run(command + flags, capture_output=True, text=True)
        if done.returncode != 0:
            print(f'preprocessing the kernel headers failed:\n$ {" ".join(command + flags)}\n{done.stdout}{done.stderr}')
            return 1
        deps = depfile.read_text().replace('\\\n', ' ').split()
    found = sorted({r for r in RUNTIME_HEADERS for d in deps if d.endswith('/' + r)})
    if found:
        print(f'the kernel headers ({", ".join(KERNEL_HEADERS)}) include the host runtime: {", ".join(found)}')
        return 1
    print(f'{len(deps)} files preprocessed for {", ".join(KERNEL_HEADERS)}; none of {", ".join(RUNTIME_HEADERS)}')
    return 0


if __name__ == '__main__':
    sys.exit(main())
