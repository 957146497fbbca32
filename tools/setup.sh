#!/usr/bin/env bash
# tools/setup.sh: installs what building and testing symm needs and is missing; quiet when nothing is.
#
#   tools/setup.sh            # install what is missing
#   source tools/setup.sh     # the same, and put meson, ninja and nvcc on this shell's PATH
#
# Debian/Ubuntu packages: catch2 libfmt-dev pkg-config cmake (apt-get, through sudo when not root; `apt-get update`
# only when something must be installed). Python: meson 1.12.x and ninja (pip; --user when not root). The CUDA
# toolkit is not installed here: with one (nvcc on PATH, in $CUDA_HOME, $CUDA_PATH or /usr/local/cuda) symm builds
# both backends; without one only the host backend, whose CCCL headers are then fetched from PyPI (the
# nvidia-cuda-cccl package, into the private prefix `tools/find-cccl.py --prefix` prints), where Meson finds them.
# SYMM_TOOLKIT=none: behave as on a machine without a toolkit even if there is one (the no-toolkit CI stage).
# For the launcher tests, unless SYMM_TEST_LAUNCHERS=0: openmpi-bin (apt) and MPICH's mpiexec (PyPI's mpich wheel,
# into the same cache).
# SYMM_NVSHMEM_HEADERS=1: also unpack NVSHMEM's headers, only the include/ of PyPI's nvidia-nvshmem-cu13 wheel, into
# the same cache (beside CCCL's), for the NVSHMEM twin of benchmarks/compile_time.py; =PATH.whl: from that wheel.
# Prints one line per thing installed and nothing else on success.
if [ "${1:-}" = --help ] || [ "${1:-}" = -h ]; then
  sed -n '2,/^[^#]/{/^#/{s/^# \{0,1\}//;p}}' "${BASH_SOURCE[0]}"
  return 0 2>/dev/null || exit 0 # sourced or run
fi

symm_setup() {
  local sudo='' log
  if [ "$(id -u)" != 0 ]; then
    if command -v sudo >/dev/null 2>&1; then sudo='sudo'; fi
  fi
  log="$(mktemp "${TMPDIR:-/tmp}/symm-setup.XXXXXX")"
  # `pip install` as every install below runs it; Debian's python (PEP 668) needs --break-system-packages, harmless
  # here: meson, ninja and NVIDIA's tool and header wheels are pure tools, no conflict with Debian's packages.
  local pip_install=(install -q --disable-pip-version-check) pip_user=()
  if python3 -c 'import os, sys, sysconfig; sys.exit(not os.path.exists(os.path.join(sysconfig.get_path("stdlib"), "EXTERNALLY-MANAGED")))' 2>/dev/null; then
    pip_install+=(--break-system-packages)
  fi
  if [ "$(id -u)" != 0 ]; then pip_user=(--user); fi

  # --- CUDA toolkit: located, never installed; without one, CCCL's headers for the host backend -----------------
  local nvcc_path='' here
  here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
  if [ "${SYMM_TOOLKIT:-auto}" = none ]; then
    : # as if there were none
  elif command -v nvcc >/dev/null 2>&1; then
    nvcc_path="$(command -v nvcc)"
  else
    local d
    for d in "${CUDA_HOME:-}" "${CUDA_PATH:-}" /usr/local/cuda; do
      if [ -n "$d" ] && [ -x "$d/bin/nvcc" ]; then nvcc_path="$d/bin/nvcc"; break; fi
    done
  fi
  if [ -n "$nvcc_path" ]; then
    local cuda_root
    cuda_root="$(cd "$(dirname "$nvcc_path")/.." && pwd)"
    if [ ! -d "$cuda_root/include/cccl" ]; then
      echo "setup.sh: error: the CUDA toolkit at $cuda_root has no include/cccl: symm needs CUDA 13 or later." >&2
      rm -f "$log"; return 1
    fi
    case ":$PATH:" in *":$cuda_root/bin:"*) ;; *) export PATH="$PATH:$cuda_root/bin" ;; esac
  elif ! python3 "$here/find-cccl.py" >/dev/null 2>&1; then
    # No toolkit: the host backend needs only CCCL's headers, which PyPI's nvidia-cuda-cccl ships as the toolkit does.
    local cccl_prefix cccl_version
    cccl_prefix="$(python3 "$here/find-cccl.py" --prefix)"
    cccl_version="$(python3 "$here/find-cccl.py" --version)"
    if ! python3 -m pip "${pip_install[@]}" --no-deps --target "$cccl_prefix" "nvidia-cuda-cccl==$cccl_version" >"$log" 2>&1 ||
      ! python3 "$here/find-cccl.py" >/dev/null 2>&1; then
      cat "$log" >&2
      echo "setup.sh: error: no CUDA toolkit here, and pip could not fetch CCCL's headers (nvidia-cuda-cccl==$cccl_version into $cccl_prefix; log above)." >&2
      echo "  Install the CUDA 13 toolkit, or fetch that package by hand and configure with -Dcccl_include=DIR/nvidia/cu13/include/cccl." >&2
      rm -f "$log"; return 1
    fi
    echo "setup.sh: no CUDA toolkit: installed CCCL's headers (pip: nvidia-cuda-cccl $cccl_version) into $cccl_prefix; symm builds the host backend only"
  fi

  # --- distribution packages: each is satisfied by the package or by an equivalent already there ---------------
  local missing=() pkg
  has_pkg() { dpkg -s "$1" 2>/dev/null | grep -q '^Status: install ok installed'; }
  for pkg in catch2 libfmt-dev pkg-config cmake clang-format; do
    has_pkg "$pkg" && continue
    case "$pkg" in # a copy built from source, as on machines without network, counts too
      clang-format) command -v clang-format >/dev/null 2>&1 && continue ;;
      pkg-config) command -v pkg-config >/dev/null 2>&1 && continue ;;
      cmake) command -v cmake >/dev/null 2>&1 && continue ;;
      libfmt-dev) command -v pkg-config >/dev/null 2>&1 && pkg-config --exists 'fmt >= 9' && continue ;;
      catch2)
        if command -v pkg-config >/dev/null 2>&1 && { pkg-config --exists catch2-with-main || pkg-config --exists catch2; }; then
          continue
        fi
        ;;
    esac
    missing+=("$pkg")
  done
  if ! python3 -m pip --version >/dev/null 2>&1; then missing+=(python3-pip); fi
  if [ "${#missing[@]}" -gt 0 ]; then
    if ! command -v apt-get >/dev/null 2>&1; then
      echo "setup.sh: error: missing ${missing[*]} and no apt-get here; install them with your package manager." >&2
      rm -f "$log"; return 1
    fi
    if [ "$(id -u)" != 0 ] && [ -z "$sudo" ]; then
      echo "setup.sh: error: missing ${missing[*]}; not root and no sudo to install them." >&2
      rm -f "$log"; return 1
    fi
    if ! { $sudo env DEBIAN_FRONTEND=noninteractive apt-get update -q &&
      $sudo env DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends "${missing[@]}"; } >"$log" 2>&1; then
      cat "$log" >&2
      echo "setup.sh: error: apt-get could not install ${missing[*]} (log above)." >&2
      rm -f "$log"; return 1
    fi
    for pkg in "${missing[@]}"; do echo "setup.sh: installed $pkg (apt)"; done
  fi

  # --- meson 1.12.x and ninja from pip ------------------------------------------------------------------------
  local user_bin scripts_bin
  user_bin="$(python3 -c 'import site; print(site.getuserbase())')/bin" # not `-m site --user-base`: exits 1 in a venv
  scripts_bin="$(python3 -c 'import sysconfig; print(sysconfig.get_path("scripts"))')"
  local d
  for d in "$scripts_bin" "$user_bin"; do # a previous run's install counts even if its folder is not on PATH yet
    if [ -x "$d/meson" ]; then
      case ":$PATH:" in *":$d:"*) ;; *) export PATH="$d:$PATH" ;; esac
    fi
  done
  local meson_version=''
  meson_version="$(meson --version 2>/dev/null || true)"
  case "$meson_version" in
    1.12.*) ;;
    *)
      local target_bin="$scripts_bin"
      if [ "${#pip_user[@]}" -gt 0 ]; then target_bin="$user_bin"; fi
      if ! python3 -m pip "${pip_install[@]}" "${pip_user[@]}" meson==1.12.1 ninja==1.13.0 >"$log" 2>&1; then
        cat "$log" >&2
        echo "setup.sh: error: pip could not install meson==1.12.1 ninja==1.13.0 (log above)." >&2
        rm -f "$log"; return 1
      fi
      local was_on_path=0
      case ":$PATH:" in *":$target_bin:"*) was_on_path=1 ;; *) export PATH="$target_bin:$PATH" ;; esac
      hash -r
      echo "setup.sh: installed meson 1.12.1 and ninja 1.13.0 (pip) into $target_bin"
      if [ "${SYMM_SETUP_SOURCED:-0}" = 0 ] && [ "$was_on_path" = 0 ]; then
        echo "setup.sh: run: export PATH=\"$target_bin:\$PATH\" (or source tools/setup.sh)"
      fi
      ;;
  esac
  if ! command -v ninja >/dev/null 2>&1; then
    echo "setup.sh: error: ninja is not on PATH (pip install ninja==1.13.0)." >&2
    rm -f "$log"; return 1
  fi

  # --- cuobjdump and nvdisasm, for the SASS zero-cost test: some toolkit installs ship only the compiler -----------
  local nvcc_bin
  nvcc_bin="$(dirname "${nvcc_path:-/usr/local/cuda/bin/nvcc}")"
  if [ -n "$nvcc_path" ] && [ ! -x "$nvcc_bin/cuobjdump" ] && ! command -v cuobjdump >/dev/null 2>&1 &&
    ! python3 -c 'import nvidia.cu13, os, sys; sys.exit(not any(os.path.exists(os.path.join(p, "bin", "cuobjdump")) for p in nvidia.cu13.__path__))' >/dev/null 2>&1; then
    if ! python3 -m pip "${pip_install[@]}" "${pip_user[@]}" nvidia-cuda-cuobjdump==13.5.37 nvidia-cuda-nvdisasm==13.5.37 >"$log" 2>&1; then
      cat "$log" >&2
      echo "setup.sh: error: pip could not install nvidia-cuda-cuobjdump and nvidia-cuda-nvdisasm (log above)." >&2
      rm -f "$log"; return 1
    fi
    echo "setup.sh: installed cuobjdump and nvdisasm 13.5.37 (pip: nvidia-cuda-cuobjdump, nvidia-cuda-nvdisasm)"
  fi

  # --- Launchers for the tools suite's tests with the real ones (RealLauncherTest) --------------------------------
  # Open MPI's mpirun (Debian's openmpi-bin) and MPICH's mpiexec (PyPI's mpich wheel, 13 MB, into the per-user cache
  # beside CCCL's, where the test looks). Not fatal: without one, its test skips, saying so. SYMM_TEST_LAUNCHERS=0
  # skips both installs.
  if [ "${SYMM_TEST_LAUNCHERS:-1}" != 0 ]; then
    if ! command -v ompi_info >/dev/null 2>&1 && command -v apt-get >/dev/null 2>&1 &&
      { [ "$(id -u)" = 0 ] || [ -n "$sudo" ]; }; then
      if { $sudo env DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends openmpi-bin ||
        { $sudo env DEBIAN_FRONTEND=noninteractive apt-get update -q &&
          $sudo env DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends openmpi-bin; }; } \
        >"$log" 2>&1; then
        echo "setup.sh: installed openmpi-bin (apt), for the launcher tests"
      else
        echo "setup.sh: note: apt-get could not install openmpi-bin; the Open MPI launcher test will skip"
      fi
    fi
    local mpich_version=5.0.2 mpich_prefix
    mpich_prefix="$(dirname "$(python3 "$here/find-cccl.py" --prefix)")/mpich-$mpich_version"
    if [ ! -x "$mpich_prefix/bin/mpiexec" ]; then
      if python3 -m pip "${pip_install[@]}" --no-deps --ignore-installed --prefix "$mpich_prefix" \
        "mpich==$mpich_version" >"$log" 2>&1 && [ -x "$mpich_prefix/bin/mpiexec" ]; then
        echo "setup.sh: installed MPICH's mpiexec $mpich_version (pip: mpich) into $mpich_prefix, for the launcher tests"
      else
        echo "setup.sh: note: pip could not install mpich==$mpich_version into $mpich_prefix; the MPICH launcher test will skip"
      fi
    fi
  fi

  # --- on request, NVSHMEM's headers (include/ only) for the NVSHMEM twin of benchmarks/compile_time.py -----------
  # The nvidia-nvshmem-cu13 wheel is 60 MB, nearly all libraries; the compile-only twin needs its 0.8 MB of headers.
  # They go beside CCCL's in the per-user cache, where compile_time.py looks; nvshmem.h is unpacked last, so that its
  # presence means the whole directory is there.
  if [ -n "${SYMM_NVSHMEM_HEADERS:-}" ] && [ "$SYMM_NVSHMEM_HEADERS" != 0 ]; then
    local nvshmem_version=3.4.5 nvshmem_prefix nvshmem_wheel nvshmem_tmp
    nvshmem_prefix="$(dirname "$(python3 "$here/find-cccl.py" --prefix)")/nvidia-nvshmem-cu13-$nvshmem_version"
    if [ ! -f "$nvshmem_prefix/nvidia/nvshmem/include/nvshmem.h" ]; then
      nvshmem_tmp="$(mktemp -d "${TMPDIR:-/tmp}/symm-nvshmem.XXXXXX")"
      case "$SYMM_NVSHMEM_HEADERS" in
        *.whl) nvshmem_wheel="$SYMM_NVSHMEM_HEADERS" ;; # a wheel already downloaded
        *)
          python3 -m pip download -q --disable-pip-version-check --no-deps --only-binary=:all: \
            -d "$nvshmem_tmp" "nvidia-nvshmem-cu13==$nvshmem_version" >"$log" 2>&1 || true
          nvshmem_wheel="$(find "$nvshmem_tmp" -maxdepth 1 -name 'nvidia_nvshmem_cu13-*.whl' | head -n 1)"
          ;;
      esac
      if [ -z "$nvshmem_wheel" ] || ! python3 -c '
import sys, zipfile
include = "nvidia/nvshmem/include/"
with zipfile.ZipFile(sys.argv[1]) as wheel:
    names = [n for n in wheel.namelist() if n.startswith(include) and not n.endswith("/")]
    last = include + "nvshmem.h"
    if last not in names:
        sys.exit(f"{sys.argv[1]}: no {last}")
    for name in sorted(names, key=lambda n: n == last):
        wheel.extract(name, sys.argv[2])
' "$nvshmem_wheel" "$nvshmem_prefix" >>"$log" 2>&1; then
        cat "$log" >&2
        echo "setup.sh: error: could not unpack NVSHMEM's headers (nvidia-nvshmem-cu13==$nvshmem_version, ${nvshmem_wheel:-not downloaded}) into $nvshmem_prefix (log above)." >&2
        echo "  SYMM_NVSHMEM_HEADERS=/path/to/nvidia_nvshmem_cu13-$nvshmem_version-*.whl uses a wheel fetched by hand." >&2
        rm -rf "$nvshmem_tmp"; rm -f "$log"; return 1
      fi
      rm -rf "$nvshmem_tmp"
      echo "setup.sh: unpacked NVSHMEM's headers (nvidia-nvshmem-cu13 $nvshmem_version, include/ only) into $nvshmem_prefix"
    fi
  fi
  rm -f "$log"
  return 0
}

if [ "${BASH_SOURCE[0]}" = "$0" ]; then
  set -euo pipefail
  SYMM_SETUP_SOURCED=0 symm_setup
else
  SYMM_SETUP_SOURCED=1 symm_setup
fi
