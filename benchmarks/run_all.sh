#!/usr/bin/env bash
# run_all.sh BUILD_DIR OUT_DIR [-- ARGS FOR EVERY BENCH]
#
# One command for a GPU machine: records the environment (OUT_DIR/env.txt: GPU, driver, clocks, MPS, the commit and
# how the programs were built), starts a private MPS daemon when PEs share a GPU and none runs, then runs the bench_*
# programs of BUILD_DIR (bench_symm, bench_raw, bench_nvshmem, then any other) in BENCH_ROUNDS rounds (default 3) of
# 2 PEs, interleaved: symm, raw, nvshmem, symm, raw, nvshmem, ... (each run gets --round R, the CSV's round column), so
# that a slow minute of the machine hits every implementation alike; then once with each PE count of BENCH_PES_LIST
# (default "4 8": the pair points, PE 2k with 2k+1 all at once, and the collective points). It concatenates the rows
# into OUT_DIR/results.csv and runs report.py (OUT_DIR/report.txt, summary.md, results.json, plots/).
#
# Time: the whole suite is budgeted to BENCH_TOTAL_S (default 470 s: 3 rounds at 2 PEs plus the 4- and 8-PE runs fit
# in one 9-minute call on 1 x H200), each run to BENCH_BIN_TIMEOUT_S (default 120). The per-point budget is set here
# unless the environment sets it: BENCH_TARGET_MS=1, BENCH_LAT_TARGET_MS=2, BENCH_REPS=5, BENCH_SWEEP_FACTOR=4,
# BENCH_SMALL_MAX_BYTES=256K, BENCH_COLL_MAX_BYTES=64M. A run that would start with less than 30 s left is not run,
# with a message (and a line in env.txt): a run of round 1 then counts as a failure, later rounds and the extra PE
# counts do not. The elapsed time is printed at the end and written to env.txt.
# Environment: BENCH_* variables reach the programs (see bench_raw --help; --pes and --round are set here, so
# BENCH_PES and BENCH_ROUND are ignored); BENCH_MPS=0 never starts MPS; BENCH_COMMIT names the commit when neither
# BUILD_DIR/build-info.txt, BUILD_DIR/commit.txt nor the sources' own git work tree does.
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
total_s=${BENCH_TOTAL_S:-470}
bin_timeout_s=${BENCH_BIN_TIMEOUT_S:-120}
pes_list=${BENCH_PES_LIST-4 8}
rounds=${BENCH_ROUNDS:-3}
case $rounds in ''|*[!0-9]*|0) echo "run_all: BENCH_ROUNDS must be a positive number, not '$rounds'" >&2; exit 64 ;; esac
# The per-point budget that makes the whole suite fit (see the header); the environment wins.
export BENCH_TARGET_MS=${BENCH_TARGET_MS:-1} BENCH_LAT_TARGET_MS=${BENCH_LAT_TARGET_MS:-2} BENCH_REPS=${BENCH_REPS:-5}
export BENCH_SWEEP_FACTOR=${BENCH_SWEEP_FACTOR:-4} BENCH_SMALL_MAX_BYTES=${BENCH_SMALL_MAX_BYTES:-256K}
export BENCH_COLL_MAX_BYTES=${BENCH_COLL_MAX_BYTES:-64M}
unset BENCH_ROUND
max_pes=2
for n in $pes_list; do
  case $n in ''|*[!0-9]*) echo "run_all: BENCH_PES_LIST must hold PE counts, not '$n'" >&2; exit 64 ;; esac
  [ "$n" -gt "$max_pes" ] && max_pes=$n
done

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
  # The commit: written at build time (the GPU machine may have no .git), else the source tree's own (never a
  # repository that merely encloses it: tools/source-commit.sh), else BENCH_COMMIT.
  commit=""
  info="$build/build-info.txt" # build.sh's output folder, or Meson's benchmarks/ folder
  [ -f "$info" ] || info="$build/benchmarks/build-info.txt"
  [ -f "$info" ] && commit=$(sed -n 's/^commit: //p' "$info" | head -n 1)
  [ -z "$commit" ] && [ -f "$build/commit.txt" ] && commit=$(head -n 1 "$build/commit.txt")
  if [ -z "$commit" ] || [ "$commit" = unknown ]; then
    commit=$("$here/../tools/source-commit.sh" "$here/..")
    [ "$commit" = unknown ] && commit=""
  fi
  echo "commit: ${commit:-${BENCH_COMMIT:-unknown (no commit in build-info.txt or commit.txt, the sources are not a git work tree of their own, no BENCH_COMMIT)}}"
  if [ -f "$info" ]; then grep -v '^commit: ' "$info"
  else echo "build: unknown (no build-info.txt in $build)"; fi
  echo "point budget: BENCH_TARGET_MS=$BENCH_TARGET_MS BENCH_LAT_TARGET_MS=$BENCH_LAT_TARGET_MS BENCH_REPS=$BENCH_REPS" \
    "BENCH_SWEEP_FACTOR=$BENCH_SWEEP_FACTOR BENCH_SMALL_MAX_BYTES=$BENCH_SMALL_MAX_BYTES" \
    "BENCH_COLL_MAX_BYTES=$BENCH_COLL_MAX_BYTES; rounds: $rounds; PE counts: 2 ${pes_list}"
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
if [ "$max_pes" -gt 2 ]; then
  ndev=$((ngpu > 0 ? ngpu : 1))
  placement="$placement; pair and collective runs with ${pes_list// /, } PEs too (PE k on GPU k % $ndev, up to"
  placement="$placement $(( (max_pes + ndev - 1) / ndev )) PEs per GPU)"
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
elif [ "$ngpu" -lt "$max_pes" ] && [ "${BENCH_MPS:-1}" != 0 ]; then
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
elif [ "$ngpu" -ge "$max_pes" ]; then
  mps_state="not needed (one GPU per PE)"
fi
echo "MPS: $mps_state" | tee -a "$out/env.txt"
if command -v nvidia-smi >/dev/null 2>&1; then
  { echo "---- nvidia-smi -q -d CLOCK"; nvidia-smi -q -d CLOCK 2>&1; echo "----"; } >>"$out/env.txt"
fi

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
# run_one NAME_SUFFIX PES REQUIRED BIN ROUND: one run of BIN with --pes PES --round ROUND into
# OUT_DIR/<bin>NAME_SUFFIX.csv / .log.
# REQUIRED=1: not running it for lack of time is a failure (the 2-PE runs); 0: a message only (the extra PE counts).
csvs=()
run_one() {
  local suffix=$1 pes=$2 required=$3 b=$4 round=$5
  local name left limit t0 rc dt rows
  name=$(basename "$b")$suffix
  left=$((total_s - ($(date +%s) - t_start)))
  if [ "$left" -lt 30 ]; then
    if [ "$required" = 1 ]; then
      log "$name NOT RUN: the ${total_s} s budget is spent (BENCH_TOTAL_S)"
      failed=1
    else
      log "$name not run: the ${total_s} s budget is spent (BENCH_TOTAL_S; its $pes-PE rows of round $round missing)"
      echo "not run for lack of time: $name ($pes PEs, round $round)" >>"$out/env.txt"
    fi
    return
  fi
  limit=$((left < bin_timeout_s ? left : bin_timeout_s))
  log "running $name with $pes PEs, round $round (limit ${limit} s) ..."
  t0=$(date +%s)
  BENCH_TIMEOUT_S=${BENCH_TIMEOUT_S:-$((limit - 5))} timeout -k 5 "$limit" "$b" ${bench_args[@]+"${bench_args[@]}"} \
    --pes "$pes" --round "$round" \
    >"$out/$name.csv" 2> >(tee "$out/$name.log" >&2)
  rc=$?
  wait  # the tee of stderr
  csvs+=("$out/$name.csv")
  dt=$(($(date +%s) - t0))
  rows=$(grep -vc -e '^impl,' -e '^SKIP' -e '^#' -e '^$' "$out/$name.csv" || true)
  case $rc in
    0) log "$name: ok, $rows rows in ${dt} s"; ran=$((ran + 1)) ;;
    77) log "$name: SKIPPED ($(grep -m1 SKIP "$out/$name.csv"))" ;;
    124|137)
      if [ "$required" = 0 ] && [ "$limit" -lt "$bin_timeout_s" ]; then
        # Cut short by what was left of the suite's budget, not by its own limit: the rows so far are kept.
        log "$name: stopped by the ${total_s} s budget after ${dt} s ($rows rows kept; see $out/$name.log)"
        echo "cut short by the time budget: $name ($pes PEs, $rows rows)" >>"$out/env.txt"
      else
        log "$name: TIMEOUT after ${dt} s ($rows rows kept; see $out/$name.log)"; failed=1
      fi ;;
    *) log "$name: FAILED with status $rc after ${dt} s ($rows rows kept; see $out/$name.log)"; failed=1 ;;
  esac
  # A PE killed in a kernel can leave the MPS daemon refusing new clients ("devices unavailable"): a fresh daemon
  # for the next program.
  if [ "$rc" != 0 ] && [ "$rc" != 77 ] && [ "${started_mps:-0}" = 1 ]; then
    echo quit | nvidia-cuda-mps-control >/dev/null 2>&1
    sleep 1
    nvidia-cuda-mps-control -d && sleep 1 && log "restarted the private MPS daemon after $name"
  fi
  return 0
}
# Rounds at 2 PEs, the implementations interleaved; round 1 is required, later ones run as far as the budget allows.
for ((r = 1; r <= rounds; r++)); do
  for b in "${ordered[@]}"; do
    run_one ".r$r" 2 $((r == 1 ? 1 : 0)) "$b" "$r"
  done
done
# More PEs: the pair and collective points (the programs skip the 2-PE points themselves). Every program at one PE
# count before the next count, so that a short budget loses the largest count first. A program without rows at 2 PEs
# (skipped: no GPU; or failed at once) is not run again.
for pes in $pes_list; do
  [ "$pes" -le 2 ] && continue
  for b in "${ordered[@]}"; do
    base="$out/$(basename "$b").r1"
    if ! grep -q -v -e '^impl,' -e '^SKIP' -e '^#' -e '^$' "$base.csv" 2>/dev/null; then
      log "$(basename "$b") not run with $pes PEs: no rows with 2 PEs"
      continue
    fi
    run_one ".pes$pes" "$pes" 0 "$b" 1
  done
done
stop_mps

{
  echo "impl,benchmark,scope,pes,bytes,iters,median_us,min_us,p90_us,gbps,round,grid,threads,note"
  for f in ${csvs[@]+"${csvs[@]}"}; do
    [ -f "$f" ] && grep -v -e '^impl,' -e '^SKIP' -e '^#' -e '^$' "$f"
  done
} >"$out/results.csv"
nrows=$(($(wc -l <"$out/results.csv") - 1))
# What the programs say about their own build (bench_symm: SYMM_CHECK and NDEBUG as compiled).
grep -h -m1 'build: SYMM_CHECK' "$out"/bench_symm*.r1.log 2>/dev/null | sed 's/^/program: /' >>"$out/env.txt"
log "$nrows rows in $out/results.csv (runs took $(($(date +%s) - t_start)) s)"

if [ "$nrows" -gt 0 ]; then
  python3 "$here/report.py" "$out/results.csv" --json "$out/results.json" --plots "$out/plots" \
    --summary "$out/summary.md" | tee "$out/report.txt"
else
  log "no rows: nothing to report"
fi
elapsed=$(($(date +%s) - t_start))
log "total ${elapsed} s (budget ${total_s} s)"
echo "elapsed: ${elapsed} s of the ${total_s} s budget" >>"$out/env.txt"
if [ "$ran" -eq 0 ] && [ "$failed" = 0 ]; then
  log "every program skipped (no CUDA device?)"
  exit 77
fi
exit $failed
