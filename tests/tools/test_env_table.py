#!/usr/bin/env python3
"""docs/launching.md's table of environment variables lists every SYMM_ variable that symm reads: the headers
(a "SYMM_..." string literal in include/), symmrun (tools/*.cpp), the tools' scripts (a ${SYMM_...} or $SYMM_...
read in tools/*.sh and .ci/run, an environ read in tools/*.py) and the GPU suite's support code. It fails naming
each variable the section "Every environment variable" lacks, and each it lists that nothing reads any more.

Usage: test_env_table.py SOURCE_ROOT
"""

import re
import sys
from pathlib import Path

# Set by the scripts for themselves, not read from the user's environment.
INTERNAL = {"SYMM_SETUP_SOURCED"}


def read_variables(root: Path) -> dict[str, str]:
    """{variable: the first file that reads it}."""
    found: dict[str, str] = {}

    def scan(files, pattern):
        for path in sorted(files):
            for name in re.findall(pattern, path.read_text(errors="replace")):
                if name not in INTERNAL:
                    found.setdefault(name, str(path.relative_to(root)))

    scan(root.glob("include/**/*.hpp"), r'"(SYMM_[A-Z0-9_]+)"')
    scan(root.glob("tools/*.cpp"), r'"(SYMM_[A-Z0-9_]+)"')
    scan([*root.glob("tools/*.sh"), root / ".ci/run"], r'\$\{?(SYMM_[A-Z0-9_]+)')
    scan(root.glob("tools/*.py"), r'environ(?:\.get\(|\[)[\'"](SYMM_[A-Z0-9_]+)')
    scan(root.glob("tests/gpu/gpu_support.cuh"), r'getenv\("(SYMM_[A-Z0-9_]+)"')
    return found


def documented_variables(root: Path) -> set[str]:
    text = (root / "docs/launching.md").read_text()
    start = text.find("## Every environment variable")
    if start < 0:
        sys.exit("docs/launching.md has no section '## Every environment variable'")
    section = text[start:]
    end = section.find("\n## ", 3)
    section = section if end < 0 else section[:end]
    names = set()
    for line in section.splitlines():
        if line.startswith("| `SYMM_"):
            first_cell = line.split("|")[1]
            names.update(re.findall(r"`(SYMM_[A-Z0-9_]+)`", first_cell))
    return names


def main() -> int:
    if len(sys.argv) != 2:
        sys.exit(__doc__)
    root = Path(sys.argv[1]).resolve()
    read = read_variables(root)
    documented = documented_variables(root)
    build_macros = {"SYMM_CHECK", "SYMM_MAX_TEAMS", "SYMM_DEVICE_WAIT_TIMEOUT_NS"}
    missing = sorted(set(read) - documented)
    stale = sorted(documented - set(read) - build_macros)
    for name in missing:
        print(f"{name}: read by {read[name]}, but not in docs/launching.md's 'Every environment variable'")
    for name in stale:
        print(f"{name}: in docs/launching.md's 'Every environment variable', but nothing reads it")
    if missing or stale:
        return 1
    print(f"{len(read)} variables read, all documented")
    return 0


if __name__ == "__main__":
    sys.exit(main())
