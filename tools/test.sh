#!/usr/bin/env bash
# tools/test.sh: build and run every test suite (README command 2; CI runs it through .ci/run).
#
# Stage 1, build/: the default configuration (the CUDA backend when nvcc is found); all suites: host, gpu (each gpu
#   test exits 77, i.e. skipped, without a GPU), compile, headers, tools, packaging.
# Stage 2, build-asan/: -Db_sanitize=address,undefined -Dcuda=disabled; the suites that run code on the host (every
#   suite but compile, headers and packaging, which only compile, and soak, the long soak, which stage 1 runs). On by
#   default; SYMM_SANITIZE=0 skips it.
# Stage 3, build-notoolkit/: a machine without the CUDA toolkit, as a laptop or a CPU-only CI has it. The toolkit is
#   hidden from the build: SYMM_TOOLKIT=none (setup.sh fetches CCCL's headers from PyPI's nvidia-cuda-cccl), no nvcc
#   on PATH, -Dcuda=disabled -Dtoolkit_root= (CCCL found from the package), and clean_includes checks every TU
#   without /usr/local/include (where some machines link the toolkit's headers) and with no header from
#   /usr/local/cuda. Runs tools/quickstart.sh (the host example) and every suite but soak. Skipped when there is no
#   toolkit to hide (stage 1 was that already); SYMM_NO_TOOLKIT_STAGE=0 skips it.
# Every stage runs even if an earlier one fails; the exit status is non-zero if anything failed.
# Environment: SYMM_SANITIZE (1 default, 0 off), SYMM_NO_TOOLKIT_STAGE (1 default, 0 off), SYMM_TEST_JOBS (parallel
# tests, default 2), MESON_TEST_ARGS (extra arguments for every `meson test` run, e.g. "--suite host").
if [ "${1:-}" = --help ] || [ "${1:-}" = -h ]; then sed -n '2,/^[^#]/{/^#/{s/^# \{0,1\}//;p}}' "${BASH_SOURCE[0]}"; exit 0; fi
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

# shellcheck source=tools/setup.sh
source tools/setup.sh

jobs="${SYMM_TEST_JOBS:-2}"
read -r -a extra_args <<<"${MESON_TEST_ARGS:-}"

# configure <dir> <option>...: a fresh setup, or a reconfigure of an existing one (which also picks up new headers
# and test files, listed at configure time).
configure() {
  local dir="$1"
  shift
  if [ -f "$dir/meson-private/coredata.dat" ]; then
    meson setup --reconfigure "$dir" "$@" || meson setup --wipe "$dir" "$@"
  else
    meson setup "$dir" "$@"
  fi
}

# has_cuda_backend <dir>: the build in <dir> compiles CUDA (nvcc was found and the CUDA backend is on).
has_cuda_backend() {
  meson introspect "$1" --compilers 2>/dev/null |
    python3 -c 'import json, sys; sys.exit("cuda" not in json.load(sys.stdin).get("host", {}))'
}

failed=()
started=$SECONDS

echo "=== tools/test.sh: formatting (tools/check-format.sh)"
if ! tools/check-format.sh; then
  failed+=("formatting (run tools/check-format.sh --fix)")
fi

echo "=== tools/test.sh: stage 1: build/ (all suites)"
configure build
if ! meson test -C build --print-errorlogs --num-processes "$jobs" "${extra_args[@]}"; then
  failed+=("build/ (all suites)")
fi
echo "=== tools/test.sh: stage 1 took $((SECONDS - started)) s"
if ! has_cuda_backend build; then
  echo "=== tools/test.sh: the GPU suites (gpu, sass, ptx) were not built: no CUDA toolkit (nvcc not found), the host" \
    "backend's suites ran"
fi

if [ "${SYMM_SANITIZE:-1}" != 0 ]; then
  echo "=== tools/test.sh: stage 2: build-asan/ (host suites under AddressSanitizer + UndefinedBehaviorSanitizer)"
  configure build-asan -Db_sanitize=address,undefined -Dcuda=disabled -Dbenchmarks=disabled
  export ASAN_OPTIONS="${ASAN_OPTIONS:-halt_on_error=1:abort_on_error=1:print_summary=1:detect_leaks=1}"
  export UBSAN_OPTIONS="${UBSAN_OPTIONS:-halt_on_error=1:abort_on_error=1:print_summary=1:print_stacktrace=1}"
  if ! meson test -C build-asan --print-errorlogs --num-processes "$jobs" \
    --no-suite compile --no-suite headers --no-suite packaging --no-suite soak "${extra_args[@]}"; then
    failed+=("build-asan/ (host suites, ASan+UBSan)")
  fi
fi

# The no-toolkit stage, in a subshell: its PATH and SYMM_TOOLKIT stay there.
no_toolkit_stage() {
  local dir clean_path=''
  while IFS= read -r -d: dir; do # every PATH entry but those holding an nvcc (a toolkit's bin/, a wrapper)
    if [ -n "$dir" ] && [ ! -e "$dir/nvcc" ]; then clean_path="${clean_path:+$clean_path:}$dir"; fi
  done <<<"$PATH:"
  export PATH="$clean_path" SYMM_TOOLKIT=none
  unset CUDA_HOME CUDA_PATH CPLUS_INCLUDE_PATH C_INCLUDE_PATH CPATH
  if command -v nvcc >/dev/null 2>&1; then
    echo "tools/test.sh: stage 3: nvcc is still on PATH ($(command -v nvcc))" >&2
    return 1
  fi
  source tools/setup.sh || return 1
  configure build-notoolkit -Dcuda=disabled -Dtoolkit_root= -Dbenchmarks=disabled || return 1
  if ! grep -q "CCCL *: .*(the nvidia-cuda-cccl package)" build-notoolkit/meson-logs/meson-log.txt; then
    echo "tools/test.sh: stage 3: build-notoolkit/ did not take CCCL from the nvidia-cuda-cccl package" >&2
    return 1
  fi
  SYMM_BUILD_DIR=build-notoolkit tools/quickstart.sh || return 1
  meson test -C build-notoolkit --print-errorlogs --num-processes "$jobs" --no-suite soak "${extra_args[@]}"
}
if [ "${SYMM_NO_TOOLKIT_STAGE:-1}" != 0 ]; then
  if has_cuda_backend build || [ -d /usr/local/cuda/include/cccl ]; then
    echo "=== tools/test.sh: stage 3: build-notoolkit/ (the CUDA toolkit hidden: CCCL from PyPI's nvidia-cuda-cccl)"
    stage_started=$SECONDS
    if ! (no_toolkit_stage); then
      failed+=("build-notoolkit/ (no CUDA toolkit: quickstart and every suite but soak)")
    fi
    echo "=== tools/test.sh: stage 3 took $((SECONDS - stage_started)) s"
  else
    echo "=== tools/test.sh: stage 3 skipped: there is no CUDA toolkit here to hide (stage 1 built without one)"
  fi
fi

if [ "${#failed[@]}" -gt 0 ]; then
  printf '=== tools/test.sh: FAILED in %s s: %s\n' "$((SECONDS - started))" "$(IFS=';'; echo "${failed[*]}")" >&2
  exit 1
fi
echo "=== tools/test.sh: all passed in $((SECONDS - started)) s"
