#!/usr/bin/env python3
"""Every script in tools/ answers --help (and -h) with its header comment and exits 0, without doing its work: the
first line of the answer names the script, and the answer comes within seconds (a script that ignored --help and,
say, ran the whole test suite would be stopped and reported).

Usage: test_script_help.py SOURCE_ROOT
"""

import subprocess
import sys
from pathlib import Path


def main() -> int:
    if len(sys.argv) != 2:
        sys.exit(__doc__)
    root = Path(sys.argv[1]).resolve()
    scripts = sorted((root / "tools").glob("*.sh"))
    if not scripts:
        sys.exit(f"no scripts in {root / 'tools'}")
    failed = []
    for script in scripts:
        for flag in ("--help", "-h"):
            name = f"tools/{script.name} {flag}"
            try:
                done = subprocess.run(["bash", str(script), flag], capture_output=True, text=True, timeout=15,
                                      stdin=subprocess.DEVNULL)
            except subprocess.TimeoutExpired:
                failed.append(f"{name}: still running after 15 s (does it read --help?)")
                continue
            first = done.stdout.splitlines()[0] if done.stdout else ""
            if done.returncode != 0:
                failed.append(f"{name}: exit status {done.returncode}: {done.stderr.strip()[:300]}")
            elif not first.startswith(f"tools/{script.name}"):
                failed.append(f"{name}: the answer's first line is {first!r}, not the script's header")
    for line in failed:
        print(line)
    if failed:
        return 1
    print(f"{len(scripts)} scripts answer --help and -h")
    return 0


if __name__ == "__main__":
    sys.exit(main())
