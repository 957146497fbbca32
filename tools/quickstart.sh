#!/usr/bin/env bash
# tools/quickstart.sh: install what is missing, build build/, and run the first example with 2 PEs (README command 1).
# It runs the CUDA example when `nvidia-smi -L` lists a GPU and the CUDA backend was built, else the host example.
# Without a CUDA toolkit, setup fetches CCCL's headers and the host backend is built. SYMM_BUILD_DIR: the build
# folder (default build; tools/test.sh's no-toolkit stage uses build-notoolkit).
if [ "${1:-}" = --help ] || [ "${1:-}" = -h ]; then sed -n '2,/^[^#]/{/^#/{s/^# \{0,1\}//;p}}' "${BASH_SOURCE[0]}"; exit 0; fi
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
build="${SYMM_BUILD_DIR:-build}"

# shellcheck source=tools/setup.sh
source tools/setup.sh

if [ -f "$build/meson-private/coredata.dat" ]; then
  echo "quickstart: reusing $build/"
  # A build/ whose options changed type since it was configured (tests and examples became features) cannot
  # regenerate itself: configure it afresh, keeping nothing but the folder.
  meson setup --reconfigure "$build" >/dev/null 2>&1 || meson setup --wipe "$build"
else
  meson setup "$build"
fi

symmrun=$build/tools/symmrun
host_example=$build/examples/01_put_get/put_get
gpu_example=$build/examples/01_put_get/put_get_gpu

# Which backend: CUDA if the build has it (meson configured the CUDA backend) and a GPU is visible.
cuda_built=$(meson introspect "$build" --buildoptions |
  python3 -c 'import json, sys; print(next((o["value"] for o in json.load(sys.stdin) if o["name"] == "cuda"), "disabled"))')
have_cuda_compiler=$(meson introspect "$build" --compilers | python3 -c 'import json, sys; print("cuda" in json.load(sys.stdin)["host"])')
gpu_list=''
if command -v nvidia-smi >/dev/null 2>&1; then gpu_list=$(nvidia-smi -L 2>/dev/null | grep '^GPU ' || true); fi

backend=host example=$host_example why=''
if [ -z "$gpu_list" ]; then
  why='no GPU listed by nvidia-smi -L'
elif [ "$have_cuda_compiler" != True ] || [ "$cuda_built" = disabled ]; then
  why="a GPU is present, but $build/ was configured without the CUDA backend (meson setup --reconfigure $build -Dcuda=enabled)"
else
  backend=cuda example=$gpu_example why="$(echo "$gpu_list" | head -n 1)"
fi

# Build what the run needs (the whole tree builds with `meson compile -C $build`); a file that is not a build
# target (a script copied at configure time) must already be there.
targets=()
for f in "$symmrun" "$example"; do
  if ninja -C "$build" -t query "${f#"$build"/}" >/dev/null 2>&1; then targets+=("${f#"$build"/}"); fi
done
if [ "${#targets[@]}" -gt 0 ]; then ninja -C "$build" "${targets[@]}"; fi
for f in "$symmrun" "$example"; do
  if [ ! -x "$f" ]; then
    echo "quickstart: error: $f was not built (is its meson.build in place?)" >&2
    exit 1
  fi
done

echo "quickstart: backend: $backend ($why)"
echo "quickstart: $symmrun -n 2 $example"
"$symmrun" -n 2 "$example"
echo "quickstart: done; the tests: tools/test.sh"
