#!/usr/bin/env python3
"""Runs an example under symmrun and checks its output against a regular expression.

usage: run_example.py [--gpu] SYMMRUN PROGRAM N_PES REGEX
With --gpu, exits 77 (skipped) when no GPU is visible, and passes --mps to symmrun when several PEs share a GPU.
"""
import re
import subprocess
import sys


def gpu_count():
    try:
        out = subprocess.run(["nvidia-smi", "-L"], capture_output=True, text=True, timeout=30)
    except (OSError, subprocess.TimeoutExpired):
        return 0
    return sum(1 for line in out.stdout.splitlines() if line.startswith("GPU "))


def main(argv):
    gpu = argv and argv[0] == "--gpu"
    if gpu:
        argv = argv[1:]
    symmrun, program, n_pes, pattern = argv
    command = [symmrun, "-n", n_pes]
    if gpu:
        gpus = gpu_count()
        if gpus == 0:
            print("SKIP: no GPU visible; this example needs one")
            return 77
        if gpus < int(n_pes):
            command.append("--mps")
    command += ["--", program]
    result = subprocess.run(command, capture_output=True, text=True, timeout=300)
    sys.stdout.write(result.stdout)
    sys.stderr.write(result.stderr)
    if result.returncode != 0:
        print(f"FAIL: {' '.join(command)} exited with {result.returncode}")
        return 1
    if not re.search(pattern, result.stdout):
        print(f"FAIL: output does not match {pattern!r}")
        return 1
    print("PASS")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
