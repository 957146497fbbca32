#!/usr/bin/env bash
# run_all.sh BUILD_DIR OUT_DIR [-- ARGS FOR EVERY BENCH]
#
# One command for a GPU machine: prints the environment, starts a private MPS daemon when the two PEs share a GPU
# and none runs, runs every bench_* program of BUILD_DIR (bench_symm, bench_raw, bench_nvshmem, ...), concatenates
# their CSV rows into OUT_DIR/results.csv and prints the report (OUT_DIR/report.txt, results.json, plots/).
#
# Time: each program gets at most BENCH_BIN_TIMEOUT_S (default 150) seconds and the whole run BENCH_TOTAL_S
# (default 280); a program that would start with less than 30 s left is skipped with a message.
# Environment: BENCH_* variables reach the programs (see bench_raw --help); BENCH_MPS=0 never starts MPS.
# Exit status: 0 when every program ran (or skipped) and rows were produced, 77 when all skipped (no GPU), else 1.
set -uo pipefail

usage() { echo "usage: $0 BUILD_DIR OUT_DIR [-- bench args]" >&2; exit 64; }
[ $# -ge 2 ] || usage
build=$(cd "$1" && pwd) || usage
mkdir -p "$2" || exit 1
out=$(cd "$2" && pwd)
shift 2
[ "${1:-}" = "--" ] && shift
bench_args=("$@")
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
t_start=$(date +%s)
total_s=${BENCH_TOTAL_S:-280}
bin_timeout_s=${BENCH_BIN_TIMEOUT_S:-150}

log() { echo "run_all: $*" >&2; }

# ---- environment ----------------------------------------------------------------------------------------------------
{
  echo "date: $(date -u +%Y-%m-%dT%H:%M:%SZ)  host: $(hostname)"
  if command -v nvidia-smi >/dev/null 2>&1; then
    nvidia-smi --query-gpu=index,name,driver_version,memory.total,compute_mode --format=csv,noheader 2>&1 |
      sed 's/^/gpu: /'
  else
    echo "gpu: nvidia-smi not found"
  fi
  if command -v nvcc >/dev/null 2>&1; then echo "nvcc: $(nvcc --version | tail -n 1)"
  elif [ -x /usr/local/cuda/bin/nvcc ]; then echo "nvcc: $(/usr/local/cuda/bin/nvcc --version | tail -n 1)"
  else echo "nvcc: not found (not needed to run)"; fi
} | tee "$out/env.txt"

ngpu=0
if command -v nvidia-smi >/dev/null 2>&1; then
  ngpu=$(nvidia-smi --query-gpu=index --format=csv,noheader 2>/dev/null | grep -c . || true)
fi
if [ "$ngpu" -ge 2 ]; then
  placement="PE 0 on GPU 0, PE 1 on GPU 1 (PE k uses device k % $ngpu)"
else
  placement="PE 0 and PE 1 share GPU 0 (two processes on one GPU: needs MPS for concurrent kernels)"
fi
echo "GPU count: $ngpu; placement: $placement" | tee -a "$out/env.txt"

# NVSHMEM: the binary has an rpath to the wheel it was built against; if this machine's wheel lives elsewhere,
# make its lib directory visible too.
nvshmem_lib=$(python3 -c 'import nvidia.nvshmem as m, os; print(os.path.join(list(m.__path__)[0], "lib"))' 2>/dev/null)
if [ -n "$nvshmem_lib" ] && [ -d "$nvshmem_lib" ]; then
  export LD_LIBRARY_PATH="$nvshmem_lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
  echo "NVSHMEM wheel libs: $nvshmem_lib" | tee -a "$out/env.txt"
fi

# ---- MPS ---------------------------------------------------------------------------------------------------------
started_mps=0
stop_mps() {
  if [ "$started_mps" = 1 ]; then
    log "stopping the private MPS daemon ($CUDA_MPS_PIPE_DIRECTORY)"
    echo quit | nvidia-cuda-mps-control >/dev/null 2>&1 || true
    started_mps=0
  fi
}
trap stop_mps EXIT
trap 'stop_mps; exit 130' INT TERM

mps_state="off"
default_pipe=${CUDA_MPS_PIPE_DIRECTORY:-/tmp/nvidia-mps}
if [ -e "$default_pipe/control" ] && pgrep -f nvidia-cuda-mps-control >/dev/null 2>&1; then
  export CUDA_MPS_PIPE_DIRECTORY="$default_pipe"
  mps_state="already running (pipe dir $default_pipe)"
elif [ "$ngpu" -lt 2 ] && [ "${BENCH_MPS:-1}" != 0 ]; then
  if command -v nvidia-cuda-mps-control >/dev/null 2>&1; then
    export CUDA_MPS_PIPE_DIRECTORY=/tmp/mps-bench CUDA_MPS_LOG_DIRECTORY=/tmp/mps-bench-log
    mkdir -p "$CUDA_MPS_PIPE_DIRECTORY" "$CUDA_MPS_LOG_DIRECTORY"
    if nvidia-cuda-mps-control -d; then
      started_mps=1
      sleep 1
      mps_state="private daemon started (pipe dir $CUDA_MPS_PIPE_DIRECTORY)"
    else
      unset CUDA_MPS_PIPE_DIRECTORY CUDA_MPS_LOG_DIRECTORY
      mps_state="FAILED to start: two-sided points will time-slice (~4.5 ms per round trip)"
    fi
  else
    mps_state="nvidia-cuda-mps-control not found: two-sided points will time-slice (~4.5 ms per round trip)"
  fi
elif [ "$ngpu" -ge 2 ]; then
  mps_state="not needed (one GPU per PE)"
fi
echo "MPS: $mps_state" | tee -a "$out/env.txt"

# ---- the programs ----------------------------------------------------------------------------------------------------
mapfile -t bins < <(find "$build" -maxdepth 2 -type f -perm -u+x -name 'bench_*' ! -name '*.*' | sort)
# symm first: if the time budget runs out, the comparison loses a baseline rather than its subject.
ordered=()
for want in bench_symm bench_raw bench_nvshmem; do
  for b in "${bins[@]}"; do [ "$(basename "$b")" = "$want" ] && ordered+=("$b"); done
done
for b in "${bins[@]}"; do
  case $(basename "$b") in bench_symm|bench_raw|bench_nvshmem) ;; *) ordered+=("$b") ;; esac
done
if [ ${#ordered[@]} -eq 0 ]; then
  log "no bench_* program under $build (build with: meson setup BUILD && ninja -C BUILD)"
  exit 1
fi
log "programs: ${ordered[*]##*/}"

failed=0
ran=0
for b in "${ordered[@]}"; do
  name=$(basename "$b")
  left=$((total_s - ($(date +%s) - t_start)))
  if [ "$left" -lt 30 ]; then
    log "$name NOT RUN: the ${total_s} s budget is spent (BENCH_TOTAL_S)"
    failed=1
    continue
  fi
  limit=$((left < bin_timeout_s ? left : bin_timeout_s))
  log "running $name (limit ${limit} s) ..."
  t0=$(date +%s)
  BENCH_TIMEOUT_S=${BENCH_TIMEOUT_S:-$((limit - 5))} timeout -k 5 "$limit" "$b" "${bench_args[@]}" \
    >"$out/$name.csv" 2> >(tee "$out/$name.log" >&2)
  rc=$?
  wait  # the tee of stderr
  dt=$(($(date +%s) - t0))
  rows=$(grep -vc -e '^impl,' -e '^SKIP' -e '^#' -e '^$' "$out/$name.csv" || true)
  case $rc in
    0) log "$name: ok, $rows rows in ${dt} s"; ran=$((ran + 1)) ;;
    77) log "$name: SKIPPED ($(grep -m1 SKIP "$out/$name.csv"))" ;;
    124|137) log "$name: TIMEOUT after ${dt} s ($rows rows kept; see $out/$name.log)"; failed=1 ;;
    *) log "$name: FAILED with status $rc after ${dt} s ($rows rows kept; see $out/$name.log)"; failed=1 ;;
  esac
done
stop_mps

{
  echo "impl,benchmark,scope,pes,bytes,iters,median_us,min_us,p90_us,gbps"
  for b in "${ordered[@]}"; do
    f="$out/$(basename "$b").csv"
    [ -f "$f" ] && grep -v -e '^impl,' -e '^SKIP' -e '^#' -e '^$' "$f"
  done
} >"$out/results.csv"
nrows=$(($(wc -l <"$out/results.csv") - 1))
log "$nrows rows in $out/results.csv (total $(($(date +%s) - t_start)) s)"

if [ "$nrows" -gt 0 ]; then
  python3 "$here/report.py" "$out/results.csv" --json "$out/results.json" --plots "$out/plots" | tee "$out/report.txt"
else
  log "no rows: nothing to report"
fi
if [ "$ran" -eq 0 ] && [ "$failed" = 0 ]; then
  log "every program skipped (no CUDA device?)"
  exit 77
fi
exit $failed
