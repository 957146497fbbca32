#!/usr/bin/env bash
# tools/gpu-check.sh BUILD_DIR OUT_DIR [what...]: the GPU-machine run of symm — the gpu suite as processes (under a
# private MPS daemon) and as threads, the GPU examples, optionally compute-sanitizer and the benchmark suite. Logs go
# to OUT_DIR; a summary table is printed last. `what` is any of: tests nvshmem examples sanitizer bench (default: all).
if [ "${1:-}" = --help ] || [ "${1:-}" = -h ]; then sed -n '2,/^[^#]/{/^#/{s/^# \{0,1\}//;p}}' "${BASH_SOURCE[0]}"; exit 0; fi
set -uo pipefail
build=$(cd "$1" && pwd); out=$(mkdir -p "$2" && cd "$2" && pwd); shift 2
what=${*:-tests nvshmem examples sanitizer bench}
here=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
summary=()
note() { summary+=("$1"); echo "== $1"; }

nvidia-smi --query-gpu=index,name,driver_version,memory.total --format=csv,noheader | tee "$out/env.txt"
ngpu=$(nvidia-smi -L | grep -c '^GPU ' || true)

# Several PEs on one GPU need MPS for their kernels to run concurrently (a barrier kernel waits for its peers).
export CUDA_MPS_PIPE_DIRECTORY=/tmp/symm-mps CUDA_MPS_LOG_DIRECTORY=/tmp/symm-mps-log
mkdir -p "$CUDA_MPS_PIPE_DIRECTORY" "$CUDA_MPS_LOG_DIRECTORY"
nvidia-cuda-mps-control -d && note "MPS daemon started ($CUDA_MPS_PIPE_DIRECTORY)"
trap 'echo quit | nvidia-cuda-mps-control; echo "MPS daemon stopped"' EXIT

run() { # name timeout command...
  local name=$1 limit=$2; shift 2
  local t0=$(date +%s%N)
  timeout "$limit" "$@" >"$out/$name.log" 2>&1
  local rc=$?
  local ms=$(( ($(date +%s%N) - t0) / 1000000 ))
  note "$(printf '%-28s rc=%-3s %7d ms  (%s)' "$name" "$rc" "$ms" "$*")"
  tail -n 4 "$out/$name.log" | sed 's/^/    /'
  return $rc
}

if [[ " $what " == *" tests "* ]]; then
  run vmm_ipc_smoke 120 "$build/tests/gpu/vmm_ipc_smoke"
  run gpu_suite 500 "$build/tests/gpu/symm_gpu_tests" --durations yes
fi
if [[ " $what " == *" nvshmem "* ]] && [ -x "$build/tests/gpu/symm_gpu_tests_nvshmem" ]; then
  # The same suite on the nvshmem backend: one node, no network transport, no multicast objects. Then again with every
  # other PE reached through NVSHMEM RMA (SYMM_NVSHMEM_RMA=1, the multi-node path), where the collectives are NVSHMEM's
  # (the [nvshmem] cases check the RMA-only behaviour).
  export NVSHMEM_REMOTE_TRANSPORT=none NVSHMEM_DISABLE_NVLS=1
  run gpu_suite_nvshmem 300 "$build/tests/gpu/symm_gpu_tests_nvshmem" --durations yes
  SYMM_NVSHMEM_RMA=1 run gpu_suite_nvshmem_rma 400 "$build/tests/gpu/symm_gpu_tests_nvshmem" --durations yes
  # And as a job across nodes, simulated: every PE a node of its own, a TCP rendezvous, host coordination over the
  # network mesh, every peer through NVSHMEM RMA.
  SYMM_NVSHMEM_RMA=1 SYMM_NODE_NAME=pe%d SYMM_BOOTSTRAP_ADDR=127.0.0.1:${SYMM_TEST_PORT:-29517} \
    run gpu_suite_nvshmem_multinode 400 "$build/tests/gpu/symm_gpu_tests_nvshmem" --durations yes
  unset NVSHMEM_REMOTE_TRANSPORT NVSHMEM_DISABLE_NVLS
fi
if [[ " $what " == *" examples "* ]]; then
  run example_put_get_gpu 60 "$build/tools/symmrun" -n 2 -- "$build/examples/01_put_get/put_get_gpu"
  grep -q 'dst\[0\] = 0' "$out/example_put_get_gpu.log" && note "example output OK: $(grep 'dst\[0\]' "$out/example_put_get_gpu.log")"
  # Every other GPU example: 4 PEs; each checks its own result and exits non-zero when it is wrong.
  for prog in "$build"/examples/0[2-9]*/*; do
    [ -x "$prog" ] && [ -f "$prog" ] || continue
    case "$prog" in *_gpu|*generic_kernel*) ;; *) continue ;; esac
    run "example_$(basename "$prog")" 60 "$build/tools/symmrun" -n 4 -- "$prog"
  done
fi
if [[ " $what " == *" sanitizer "* ]]; then
  # compute-sanitizer slows kernels 10-100x: the suite runs tag by tag, each under its own limit (SANITIZE_LIMIT_S), in
  # lanes that run side by side (SANITIZE_LANES: lanes separated by spaces, each TOOL:TAG,TAG,...). The suite's device
  # waits trap after 5 s, which a sanitized kernel can exceed: SANITIZE_BINARY names a build of the suite with a longer
  # SYMM_DEVICE_WAIT_TIMEOUT_NS (ninja tests/gpu/symm_gpu_tests_sanitize: 120 s). Each tag runs without the
  # fault-injection cases ([failure]: a PE killed on purpose); the tag `failure` runs those alone, so that the default
  # lanes put every case under memcheck once (there the killed PE's own kernels may be reported). PEs run as processes
  # unless SYMM_GPU_TEST_MODES says otherwise: as threads, memcheck holds one PE's kernel back behind another's and two
  # host-driven cases cannot finish (docs/testing.md).
  export SYMM_GPU_TEST_MODES=${SYMM_GPU_TEST_MODES:-processes}
  # Every tag of the suite under memcheck, in four lanes that fit one 10-minute call on the H200; racecheck on the host
  # and device atomics, waits and signals; synccheck on the device barriers' and collectives' __syncthreads/__syncwarp
  # (a divergent one is a hang or worse).
  lanes=${SANITIZE_LANES:-memcheck:rma,host,errors memcheck:barrier,signal,teams memcheck:atomics,wait \
memcheck:collectives,failure racecheck:atomics,wait,signal synccheck:barrier,collectives}
  limit=${SANITIZE_LIMIT_S:-240}
  binary=${SANITIZE_BINARY:-$build/tests/gpu/symm_gpu_tests}
  # Tags with cases of 8 PEs run at most two at a time, whatever their lanes: three sanitized jobs of 8 PEs at once
  # exhausted the H200 (cudaErrorDevicesUnavailable).
  eight_pe_tags=" rma atomics teams "
  take_eight_pe_slot() {
    while :; do
      for slot in 1 2; do
        exec {slot_fd}>"$out/.eight-pe-slot-$slot"
        flock -n "$slot_fd" && return 0
        exec {slot_fd}>&-
      done
      sleep 1
    done
  }
  for lane in $lanes; do
    tool=${lane%%:*}
    tags=${lane#*:}
    (
      for tag in ${tags//,/ }; do
        filter="[$tag]~[failure]"
        [ "$tag" = failure ] && filter="[failure]"
        heavy=0
        [[ "$eight_pe_tags" == *" $tag "* ]] && heavy=1 && take_eight_pe_slot
        run "${tool}_$tag" "$limit" compute-sanitizer --tool "$tool" --target-processes all --report-api-errors no \
          "$binary" "$filter" >/dev/null
        echo "${tool}_$tag rc=$? $(grep -hE "ERROR SUMMARY|RACECHECK SUMMARY" "$out/${tool}_$tag.log" | sort | uniq -c |
          tr -s ' ' | paste -sd ';') $(grep -hE "^test cases|^All tests" "$out/${tool}_$tag.log" | tail -1)" \
          >>"$out/sanitizer-summary.txt"
        [ "$heavy" = 1 ] && exec {slot_fd}>&- # the slot's lock goes with its descriptor
      done
    ) &
  done
  wait
  rm -f "$out"/.eight-pe-slot-*
  note "sanitizer summary (rc 0: the tag's cases passed under the tool; 124: the limit ended it)"
  sed 's/^/    /' "$out/sanitizer-summary.txt"
fi
if [[ " $what " == *" bench "* ]]; then
  BENCH_MPS=0 run bench 300 "$here/benchmarks/run_all.sh" "$build/benchmarks" "$out/bench" -- ${BENCH_ARGS:-}
  [ -f "$out/bench/report.txt" ] && cat "$out/bench/report.txt"
  tar -C "$out" -czf "$out/bench.tgz" bench && rm -rf "$out/bench" # one file: the tool brings back few files
fi
printf '%s\n' "${summary[@]}"
