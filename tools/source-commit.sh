#!/usr/bin/env bash
# tools/source-commit.sh [SOURCE_DIR]: the commit of symm's source tree (default: the tree this script is in), with
# " (with uncommitted changes)" when include/, benchmarks/ or tests/ differ from it; "unknown" when SOURCE_DIR is not
# the top of a git work tree. A git repository that merely encloses the sources (symm copied into a subfolder of
# another project) is not asked: its commit would name somebody else's history.
if [ "${1:-}" = --help ] || [ "${1:-}" = -h ]; then sed -n '2,/^[^#]/{/^#/{s/^# \{0,1\}//;p}}' "${BASH_SOURCE[0]}"; exit 0; fi
set -uo pipefail
source_dir=$(cd "${1:-$(dirname "${BASH_SOURCE[0]}")/..}" 2>/dev/null && pwd -P) || { echo unknown; exit 0; }
top=$(git -C "$source_dir" rev-parse --show-toplevel 2>/dev/null) || { echo unknown; exit 0; }
if [ "$(cd "$top" && pwd -P)" != "$source_dir" ]; then
  echo unknown
  exit 0
fi
commit=$(git -C "$source_dir" rev-parse HEAD 2>/dev/null) || { echo unknown; exit 0; }
git -C "$source_dir" diff --quiet HEAD -- include benchmarks tests 2>/dev/null || commit="$commit (with uncommitted changes)"
echo "$commit"
