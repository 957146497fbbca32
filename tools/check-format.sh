#!/usr/bin/env bash
# tools/check-format.sh: checks that every C++ file git tracks is formatted with the repository's .clang-format.
#
# usage: tools/check-format.sh [--untracked] [--fix] [--] [PATH...]
#   PATH...      only files under these paths (default: the whole repository)
#   --untracked  also check files git does not track yet but does not ignore (new files before `git add`)
#   --fix        format the offending files in place instead of failing (clang-format -i)
# Files: *.cpp *.hpp *.h *.cc *.cu *.cuh. Exit status: 0 when every file is formatted (or was fixed), 1 when some are
# not (each is listed, with the command that fixes it), 2 when clang-format is missing or too old, or on bad usage.
# Environment: CLANG_FORMAT, the clang-format to use (default: clang-format on PATH; version 14 or newer, since the
# .clang-format uses options that 14 introduced and leaves out newer ones).
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

untracked=0
fix=0
paths=()
while [ $# -gt 0 ]; do
  case "$1" in
    --untracked) untracked=1 ;;
    --fix) fix=1 ;;
    -h | --help)
      sed -n '2,12p' "${BASH_SOURCE[0]}" | sed 's/^# \{0,1\}//'
      exit 0
      ;;
    --)
      shift
      paths+=("$@")
      break
      ;;
    -*)
      echo "check-format: unknown option $1 (see --help)" >&2
      exit 2
      ;;
    *) paths+=("$1") ;;
  esac
  shift
done

clang_format="${CLANG_FORMAT:-clang-format}"
if ! command -v "$clang_format" >/dev/null 2>&1; then
  echo "check-format: $clang_format not found; install clang-format 14 or newer (apt-get install clang-format)" \
    "or set CLANG_FORMAT" >&2
  exit 2
fi
version="$("$clang_format" --version | sed -n 's/.*version \([0-9][0-9]*\)\..*/\1/p' | head -n 1)"
if [ -z "$version" ] || [ "$version" -lt 14 ]; then
  echo "check-format: $clang_format is version ${version:-unknown}; the .clang-format needs 14 or newer" >&2
  exit 2
fi

patterns=('*.cpp' '*.hpp' '*.h' '*.cc' '*.cu' '*.cuh')
list_files() {
  local -a specs=()
  local p pat
  if [ ${#paths[@]} -eq 0 ]; then
    specs=("${patterns[@]}")
  else
    for p in "${paths[@]}"; do
      for pat in "${patterns[@]}"; do specs+=("${p%/}/$pat" "${p%/}/**/$pat"); done
      case "$p" in *.cpp | *.hpp | *.h | *.cc | *.cu | *.cuh) specs+=("$p") ;; esac
    done
  fi
  git ls-files -z -- "${specs[@]}"
  if [ "$untracked" -eq 1 ]; then git ls-files -z --others --exclude-standard -- "${specs[@]}"; fi
}

mapfile -d '' files < <(list_files | sort -zu)
if [ ${#files[@]} -eq 0 ]; then
  echo "check-format: no C++ files to check"
  exit 0
fi

bad=()
for f in "${files[@]}"; do
  [ -f "$f" ] || continue # listed by git but deleted in the working tree
  if ! "$clang_format" --style=file --dry-run -Werror "$f" >/dev/null 2>&1; then bad+=("$f"); fi
done

if [ ${#bad[@]} -eq 0 ]; then
  echo "check-format: ${#files[@]} files formatted"
  exit 0
fi
if [ "$fix" -eq 1 ]; then
  "$clang_format" --style=file -i "${bad[@]}"
  echo "check-format: formatted ${#bad[@]} of ${#files[@]} files:"
  printf '  %s\n' "${bad[@]}"
  exit 0
fi
echo "check-format: ${#bad[@]} of ${#files[@]} files are not formatted with .clang-format ($clang_format $version):" >&2
printf '  %s\n' "${bad[@]}" >&2
echo "fix them with: tools/check-format.sh --fix (or: $clang_format -i <files>)" >&2
exit 1
