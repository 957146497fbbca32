#!/usr/bin/env bash
# tools/test.sh: build and run every test suite (README command 2; CI runs it through .ci/run).
#
# Stage 1, build/: the default configuration (the CUDA backend when nvcc is found); all suites: host, gpu (each gpu
#   test exits 77, i.e. skipped, without a GPU), compile, headers, tools, packaging.
# Stage 2, build-asan/: -Db_sanitize=address,undefined -Dcuda=disabled; the suites that run code on the host (every
#   suite but compile, headers and packaging, which only compile, and soak, the long soak, which stage 1 runs). On by
#   default; SYMM_SANITIZE=0 skips it.
# Both stages run even if the first fails; the exit status is non-zero if anything failed.
# Environment: SYMM_SANITIZE (1 default, 0 off), SYMM_TEST_JOBS (parallel tests, default 2), MESON_TEST_ARGS (extra
# arguments for both `meson test` runs, e.g. "--suite host").
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

if [ "${#failed[@]}" -gt 0 ]; then
  printf '=== tools/test.sh: FAILED in %s s: %s\n' "$((SECONDS - started))" "$(IFS=';'; echo "${failed[*]}")" >&2
  exit 1
fi
echo "=== tools/test.sh: all passed in $((SECONDS - started)) s"
