#!/usr/bin/env python3
"""tools/find-cccl.py: where CCCL's headers are when there is no CUDA toolkit (the host backend needs only them).

usage: find-cccl.py            print the include directory (the one holding nv/target, cuda/std, cub, thrust) of
                               the first CCCL found, exit 1 when none is
       find-cccl.py --prefix   print the private prefix tools/setup.sh installs the nvidia-cuda-cccl package into

Looked for, in order: the private prefix, ${SYMM_DEPS_DIR:-${XDG_CACHE_HOME:-~/.cache}/symm}/nvidia-cuda-cccl-VERSION
(tools/setup.sh puts it there on a machine without a toolkit); then the nvidia-cuda-cccl package installed into this
python3 (`pip install nvidia-cuda-cccl`). Both hold CCCL as the CUDA 13 toolkit does, under nvidia/cu13/include/cccl.
Meson runs this when neither -Dcccl_include nor a toolkit gives CCCL.
"""

import importlib.util
import os
import sys
from pathlib import Path

# The CCCL of the CUDA 13.0 toolkit (CCCL 3.0.1), the toolkit symm is tested with.
CCCL_PACKAGE_VERSION = '13.0.85'


def private_prefix() -> Path:
    deps = os.environ.get('SYMM_DEPS_DIR') or Path(os.environ.get('XDG_CACHE_HOME') or Path.home() / '.cache') / 'symm'
    return Path(deps) / f'nvidia-cuda-cccl-{CCCL_PACKAGE_VERSION}'


def candidates():
    yield private_prefix() / 'nvidia' / 'cu13' / 'include' / 'cccl'
    spec = importlib.util.find_spec('nvidia.cu13') if importlib.util.find_spec('nvidia') else None
    for root in (spec.submodule_search_locations or []) if spec else []:
        yield Path(root) / 'include' / 'cccl'


def main() -> int:
    if sys.argv[1:] == ['--prefix']:
        print(private_prefix())
        return 0
    if sys.argv[1:] == ['--version']:
        print(CCCL_PACKAGE_VERSION)
        return 0
    if sys.argv[1:]:
        print(__doc__, file=sys.stderr)
        return 2
    for include in candidates():
        if (include / 'nv' / 'target').is_file() and (include / 'cuda' / 'std').is_dir():
            print(include)
            return 0
    print(f'find-cccl: no CCCL headers in {private_prefix()} nor in a python3 package nvidia-cuda-cccl '
          '(tools/setup.sh installs them)', file=sys.stderr)
    return 1


if __name__ == '__main__':
    sys.exit(main())
