#!/usr/bin/env bash
# tools/sanitize-cases.sh BINARY OUT_DIR 'TOOL|CATCH_SPEC' ... : compute-sanitizer over chosen cases of the GPU suite,
# for the cases a tag-by-tag run (tools/gpu-check.sh ... sanitizer) could not finish. Items run one after another in
# one lane (several lanes of 8-PE cases under the tools exhaust the GPU: cudaErrorDevicesUnavailable); each under
# LIMIT seconds (default 300), all within TOTAL (default 570). BINARY: the suite built with long device waits (ninja
# tests/gpu/symm_gpu_tests_sanitize). Starts and stops its own MPS daemon. SYMM_GPU_TEST_MODES=processes (or threads)
# in the environment runs each case's PEs one way only (not the [failure] case's, which sanitizer runs leave out).
# Example:
#   tools/sanitize-cases.sh build/tests/gpu/symm_gpu_tests_sanitize out 'memcheck|*std::int64_t' \
#       'memcheck|[signal]host*' 'racecheck|[atomics]host*'
if [ "${1:-}" = --help ] || [ "${1:-}" = -h ]; then sed -n '2,/^[^#]/{/^#/{s/^# \{0,1\}//;p}}' "${BASH_SOURCE[0]}"; exit 0; fi
set -u
binary=$1; out=$(mkdir -p "$2" && cd "$2" && pwd); shift 2
export CUDA_MPS_PIPE_DIRECTORY=/tmp/symm-mps CUDA_MPS_LOG_DIRECTORY=/tmp/symm-mps-log
mkdir -p "$CUDA_MPS_PIPE_DIRECTORY" "$CUDA_MPS_LOG_DIRECTORY"
nvidia-cuda-mps-control -d
trap 'echo quit | nvidia-cuda-mps-control' EXIT
limit=${LIMIT:-300}; t0=$(date +%s)
for item in "$@"; do
  tool=${item%%|*}; spec=${item#*|}
  name=$(echo "$tool-$spec" | tr -c 'a-zA-Z0-9\n' '_' | cut -c1-60)
  left=$(( ${TOTAL:-570} - ($(date +%s) - t0) ))
  if [ "$left" -lt 30 ]; then echo "$tool '$spec': not run (TOTAL spent)" | tee -a "$out/summary.txt"; continue; fi
  timeout $(( left < limit ? left : limit )) compute-sanitizer --tool "$tool" --target-processes all \
    --report-api-errors no "$binary" "$spec" >"$out/$name.log" 2>&1
  rc=$?
  echo "$tool '$spec' rc=$rc at $(( $(date +%s) - t0 )) s: $(grep -hE 'ERROR SUMMARY|RACECHECK SUMMARY' "$out/$name.log" |
    sort | uniq -c | tr -s ' ' | paste -sd ';') $(grep -hE '^test cases|^All tests' "$out/$name.log" | tail -1)" |
    tee -a "$out/summary.txt"
done
