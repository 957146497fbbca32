#!/usr/bin/env bash
# build.sh BUILD_DIR — builds the bench_* programs with nvcc alone, for a machine without Meson (or without fmt).
# The normal way is Meson (meson setup BUILD && ninja -C BUILD); this produces the same programs in BUILD_DIR,
# which run_all.sh takes as it is. CUDA_ARCH (default sm_90), NVCC (default nvcc, else /usr/local/cuda/bin/nvcc).
set -euo pipefail
[ $# -eq 1 ] || { echo "usage: $0 BUILD_DIR" >&2; exit 64; }
mkdir -p "$1"
out=$(cd "$1" && pwd)
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
root=$(dirname "$here")
nvcc=${NVCC:-$(command -v nvcc || echo /usr/local/cuda/bin/nvcc)}
cuda_root=$(dirname "$(dirname "$nvcc")")
arch=${CUDA_ARCH:-sm_90}
flags=(-std=c++20 -O3 -lineinfo -arch="$arch" --expt-relaxed-constexpr "-Xcompiler=-Wall,-Wextra")

echo "build.sh: bench_raw" >&2
"$nvcc" "${flags[@]}" "$here/bench_raw.cu" -o "$out/bench_raw"

nv=$(python3 -c 'import nvidia.nvshmem as m; print(list(m.__path__)[0])' 2>/dev/null || true)
nv=${NVSHMEM_ROOT:-$nv}
if [ -n "$nv" ] && [ -f "$nv/include/nvshmem.h" ] && [ -f "$nv/lib/libnvshmem_device.a" ]; then
  host_lib=-lnvshmem_host
  [ -e "$nv/lib/libnvshmem_host.so.3" ] && host_lib=-l:libnvshmem_host.so.3
  echo "build.sh: bench_nvshmem (NVSHMEM in $nv)" >&2
  "$nvcc" "${flags[@]}" -rdc=true -isystem "$nv/include" "$here/bench_nvshmem.cu" "$nv/lib/libnvshmem_device.a" \
    -L"$nv/lib" "$host_lib" -Xlinker -rpath,"$nv/lib" -o "$out/bench_nvshmem"
else
  echo "build.sh: NVSHMEM not found (NVSHMEM_ROOT or the nvidia-nvshmem-cu13 wheel): bench_nvshmem skipped" >&2
fi

if [ -f "$here/bench_symm.cu" ]; then
  # The flags the root meson.build gives symm_dep (CCCL lives in include/cccl with CUDA 13).
  echo "build.sh: bench_symm" >&2
  # -DFMT_USE_CONSTEXPR=1: as the root meson.build (fmt 9 under nvcc).
  "$nvcc" "${flags[@]}" -I"$root/include" -isystem "$cuda_root/include/cccl" -DSYMM_CHECK=1 -DFMT_USE_CONSTEXPR=1 \
    -DSYMM_ENABLE_CUDA=1 \
    "$here/bench_symm.cu" -lfmt -lrt -ldl -o "$out/bench_symm"
fi
# What run_all.sh records in env.txt: the commit (the GPU machine may have no .git) and how the programs were built.
# The source tree's own commit, never that of a repository that merely encloses it (tools/source-commit.sh).
commit=$("$root/tools/source-commit.sh" "$root")
[ "$commit" = unknown ] && commit="${BENCH_COMMIT:-unknown}"
echo "$commit" >"$out/commit.txt"
{
  echo "commit: $commit"
  echo "build: build.sh, nvcc ${flags[*]}; bench_symm with -DSYMM_CHECK=1"
} >"$out/build-info.txt"
ls -l "$out"/bench_* >&2
