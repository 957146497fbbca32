#!/usr/bin/env python3
"""tests/sass/compare_sass.py: symm's device API costs nothing over hand-written CUDA IPC code, checked in the SASS.

Compiles kernels_symm.cu (symm's device API) and kernels_raw.cu (the same kernels with a raw peer table, byte offset
and PE as arguments) with nvcc into cubins, disassembles both with `cuobjdump -sass`, matches the kernels by name
(they are extern "C") and compares their memory instructions. No GPU is needed.

Builds: SYMM_CHECK=1 (the default level) against the raw kernels with the same PE range check (RAW_PE_CHECK=1), and
SYMM_CHECK=0 against the raw kernels without it. Any -DSYMM_CHECK=... among the extra flags is replaced by these two
levels: level 2 prints from device code by design (printf arguments go through local memory), so it is not zero-cost.

Asserted for each kernel pair, at both levels:
  1. the same multiset of global/generic memory instructions and fences (LDG STG LD ST ATOM ATOMG RED REDG LDGSTS
     MEMBAR FENCE CCTL and the TMA/bulk-copy forms), each keyed by opcode + access width (.U8 .S8 .U16 .S16, 32 when
     unmarked, .64 .128) + ordering modifiers (.STRONG.GPU, .SYS, ...) + whether it lies in a loop body. Ignored in
     the key: .E (64-bit addressing, always on) and cache hints (.CONSTANT, i.e. ld.global.nc, .EF .EL .LU .EU .NA
     .LTC64B/.LTC128B/.LTC256B), which change no traffic; and the generic forms LD/ST count as LDG/STG (the same
     access to the same memory, the address space resolved in hardware), so the key's LDG means LDG or LD. The
     sequence and the registers are not compared;
  1b. no more generic accesses (LD/ST) in the symm kernel than in the raw one: symm must not hide the global address
     space from the compiler where the raw code keeps it (fewer is fine);
  2. the same multiset of shared-memory instructions (LDS STS ATOMS LDSM STSM), keyed the same way;
  3. no local memory in the symm kernels: no LDL/STL, and LOCAL:0 STACK:0 in `cuobjdump -res-usage`. Kernels with a
     device wait included: a wait that gives up writes a trap record (plain stores, no call) instead of printing, so
     no printf frame, and no call before the system fences (any call adds `@!PT LDS` and MEMBAR.ALL.CTA there, which
     rules 1 and 2 catch against the raw kernels, whose waits give up the same way);
  4. in the loop kernels with 32-bit data (p_loop, g_loop, ring_loop, p_quiet_loop) no 64-bit load in a loop body: a
     64-bit load there is a re-read of the peer table. In p_quiet_loop, whose loop nvcc unrolls into a main loop and a
     remainder loop, the table may be read once before each of them (the raw kernel reads it once, by hand, before
     both): there, 64-bit loads outside loop bodies count as present or absent, not by number;
  5. no more block-synchronisation calls (CALL) and divergence checks (BRA.DIV, WARPSYNC.COLLECTIVE) in the symm
     kernel than in the raw one: cooperative_groups' thread_block::sync() checks whether the warp is converged and,
     after a device wait that only some of its threads ran, takes a slower collective path; symm's barriers meet with
     __syncthreads() (detail::sync_group), as the raw kernels do.
A loop body is the address range between a backward branch's target and the branch (BRA to a lower address).
Reported, not asserted: constant-bank loads (LDC/ULDC: kernel parameters, whose layout differs because array_ref
carries fields the raw kernels do not take), instruction counts in all and in loop bodies, registers, and the PE
check's cost (SYMM_CHECK=1 minus SYMM_CHECK=0 for the symm kernels).

Exit status: 0 pass, 1 fail, 77 (skipped, for Meson) when cuobjdump or nvdisasm cannot be found: on toolkits that
ship only the compiler they come from pip (nvidia-cuda-cuobjdump, nvidia-cuda-nvdisasm).

  python3 tests/sass/compare_sass.py --nvcc /usr/local/cuda/bin/nvcc [--arch sm_90] [--keep DIR] [-- -DFOO ...]
"""

from __future__ import annotations

import argparse
import collections
import importlib.util
import os
import re
import shutil
import subprocess
import sys
import tempfile
from dataclasses import dataclass, field
from pathlib import Path

SKIP = 77
HERE = Path(__file__).resolve().parent

GLOBAL_OPS = {"LDG", "STG", "LD", "ST", "ATOM", "ATOMG", "RED", "REDG", "LDGSTS", "LDGDEPBAR", "MEMBAR", "FENCE",
              "CCTL", "UBLKCP", "UBLKRED", "UBLKPF", "UTMALDG", "UTMASTG", "UTMAPF", "UTMAREDG", "UTMACCTL"}
LOCAL_OPS = {"LDL", "STL"}
SHARED_OPS = {"LDS", "STS", "ATOMS", "LDSM", "STSM"}
CONST_OPS = {"LDC", "ULDC"}
GENERIC_OPS = {"LD", "ST"}
GENERIC_AS_GLOBAL = {"LD": "LDG", "ST": "STG"}
WIDTHS = {"U8", "S8", "U16", "S16", "32", "64", "128"}
IGNORED_MODIFIERS = {"E", "CONSTANT", "EF", "EL", "LU", "EU", "NA", "LTC64B", "LTC128B", "LTC256B"}
# Kernels whose data are 32-bit: a 64-bit load in a loop body can only be the peer table entry.
FLOAT_LOOP_KERNELS = ("p_loop", "g_loop", "ring_loop", "p_quiet_loop")
# Kernels whose out-of-loop table reads are compared as present or absent (one per copy of an unrolled loop).
TABLE_READ_PER_LOOP_COPY = {"p_quiet_loop": "LDG.64"}

INSTR_RE = re.compile(r"^\s*/\*([0-9a-f]{4,})\*/\s+(.*?)\s*;?\s*/\*\s*0x[0-9a-f]+\s*\*/\s*$")
FUNC_RE = re.compile(r"^\s*Function\s*:\s*(\S+)\s*$")
RES_FUNC_RE = re.compile(r"^\s*Function\s+(\S+):\s*$")


@dataclass
class Instr:
    addr: int
    pred: str
    opcode: str  # with modifiers, e.g. LDG.E.64.CONSTANT
    operands: str
    in_loop: bool = False

    @property
    def base(self) -> str:
        return self.opcode.split(".")[0]

    def key(self, exact: bool = False) -> str:
        """Opcode, width and ordering modifiers: what the comparison counts (exact: LD/ST kept apart from LDG/STG)."""
        mods = [m for m in self.opcode.split(".")[1:] if m not in IGNORED_MODIFIERS]
        width = next((m for m in mods if m in WIDTHS), "32")
        rest = [m for m in mods if m not in WIDTHS]
        base = self.base if exact else GENERIC_AS_GLOBAL.get(self.base, self.base)
        return ".".join([base, *rest, width]) + (" [loop]" if self.in_loop else "")

    def text(self) -> str:
        pred = f"@{self.pred} " if self.pred else ""
        return f"/*{self.addr:04x}*/ {pred}{self.opcode} {self.operands}".rstrip()


@dataclass
class Kernel:
    name: str
    instrs: list[Instr]
    regs: int | None = None
    local: int | None = None
    stack: int | None = None
    loops: list[tuple[int, int]] = field(default_factory=list)

    def of(self, ops: set[str]) -> list[Instr]:
        return [i for i in self.instrs if i.base in ops]

    def multiset(self, ops: set[str], exact: bool = False) -> collections.Counter:
        counts = collections.Counter(i.key(exact) for i in self.of(ops))
        collapsed = TABLE_READ_PER_LOOP_COPY.get(self.name)
        if collapsed and counts[collapsed] > 1:
            counts[collapsed] = 1
        return counts

    def count_loop_instrs(self) -> int:
        return sum(1 for i in self.instrs if i.in_loop)


def parse_sass(text: str) -> dict[str, Kernel]:
    kernels: dict[str, Kernel] = {}
    current: Kernel | None = None
    for line in text.splitlines():
        m = FUNC_RE.match(line)
        if m:
            current = Kernel(m.group(1), [])
            kernels[current.name] = current
            continue
        m = INSTR_RE.match(line)
        if not m or current is None:
            continue
        addr, body = int(m.group(1), 16), m.group(2).strip().rstrip(";").strip()
        pred = ""
        if body.startswith("@"):
            pred, body = body[1:].split(None, 1)
        parts = body.split(None, 1)
        current.instrs.append(Instr(addr, pred, parts[0], parts[1] if len(parts) > 1 else ""))
    for k in kernels.values():
        # Drop the end padding: NOPs and the `BRA self` that follows EXIT.
        while k.instrs and (k.instrs[-1].base == "NOP" or is_self_branch(k.instrs[-1])):
            k.instrs.pop()
        mark_loops(k)
    return kernels


def branch_target(i: Instr) -> int | None:
    if i.base not in ("BRA", "JMP"):
        return None
    m = re.search(r"0x([0-9a-f]+)\s*$", i.operands)
    return int(m.group(1), 16) if m else None


def is_self_branch(i: Instr) -> bool:
    return branch_target(i) == i.addr


def mark_loops(k: Kernel) -> None:
    """A backward branch closes a loop: every instruction from its target up to the branch is in a loop body."""
    for i in k.instrs:
        t = branch_target(i)
        if t is not None and t < i.addr:
            k.loops.append((t, i.addr))
    for i in k.instrs:
        i.in_loop = any(lo <= i.addr <= hi for lo, hi in k.loops)


def parse_res_usage(text: str, kernels: dict[str, Kernel]) -> None:
    name = None
    for line in text.splitlines():
        m = RES_FUNC_RE.match(line)
        if m:
            name = m.group(1)
            continue
        if name in kernels and "REG:" in line:
            fields = dict(re.findall(r"(\w+):(\d+)", line))
            kernels[name].regs = int(fields["REG"])
            kernels[name].local = int(fields.get("LOCAL", 0))
            kernels[name].stack = int(fields.get("STACK", 0))
            name = None


# --- tools -------------------------------------------------------------------------------------------------------
def find_tool(name: str, explicit: str | None, nvcc: Path) -> Path | None:
    """The tool given, else next to nvcc, else on PATH, else from the pip wheel (nvidia/cu*/bin)."""
    if explicit:
        return Path(explicit)
    if os.environ.get(name.upper()):
        return Path(os.environ[name.upper()])
    candidates = [nvcc.parent / name]
    on_path = shutil.which(name)
    if on_path:
        candidates.append(Path(on_path))
    try:
        spec = importlib.util.find_spec("nvidia")
        for root in (spec.submodule_search_locations or []) if spec else []:
            candidates += sorted(Path(root).glob(f"cu*/bin/{name}"), reverse=True)
    except (ImportError, ValueError):
        pass
    return next((c for c in candidates if c.is_file() and os.access(c, os.X_OK)), None)


def run(cmd: list[str], env: dict[str, str] | None = None) -> str:
    p = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, env=env)
    if p.returncode != 0:
        print(f"compare_sass: command failed ({p.returncode}): {' '.join(cmd)}\n{p.stdout}", file=sys.stderr)
        sys.exit(1)
    return p.stdout


def build(args, source: Path, defines: list[str], out: Path, cuobjdump: Path, env) -> dict[str, Kernel]:
    cmd = [args.nvcc, "-std=c++20", f"-arch={args.arch}", "-O3", "--expt-relaxed-constexpr", "-DFMT_USE_CONSTEXPR=1",
           "-I", args.include, "-I", args.cccl, *args.extra, *defines, "-cubin", "-o", str(out), str(source)]
    run(cmd)
    sass = run([str(cuobjdump), "-sass", str(out)], env)
    out.with_suffix(".sass").write_text(sass)
    kernels = parse_sass(sass)
    parse_res_usage(run([str(cuobjdump), "-res-usage", str(out)], env), kernels)
    if not kernels:
        print(f"compare_sass: no functions in the SASS of {source.name}", file=sys.stderr)
        sys.exit(1)
    return kernels


# --- comparison --------------------------------------------------------------------------------------------------
def diff_instrs(symm: Kernel, raw: Kernel, ops: set[str]) -> list[str]:
    a, b = symm.multiset(ops), raw.multiset(ops)
    lines = []
    for key in sorted(set(a) | set(b)):
        if a[key] != b[key]:
            lines.append(f"    {key}: symm {a[key]}, raw {b[key]}")
            for side, k in (("symm", symm), ("raw", raw)):
                for i in k.of(ops):
                    if i.key() == key:
                        lines.append(f"      {side:4} {i.text()}")
    return lines


def compare(symm: Kernel, raw: Kernel) -> list[str]:
    problems = []
    d = diff_instrs(symm, raw, GLOBAL_OPS)
    if d:
        problems.append("global/generic memory instructions differ (opcode+width+ordering, in loop or not):")
        problems += d
    generic_symm, generic_raw = symm.of(GENERIC_OPS), raw.of(GENERIC_OPS)
    if len(generic_symm) > len(generic_raw):
        problems.append(f"more generic (LD/ST) accesses in symm ({len(generic_symm)}) than in raw ({len(generic_raw)}):")
        problems += [f"      {side:4} {i.text()}" for side, k in (("symm", generic_symm), ("raw", generic_raw)) for i in k]
    d = diff_instrs(symm, raw, SHARED_OPS)
    if d:
        problems.append("shared-memory instructions differ:")
        problems += d
    for what in ("CALL", "BRA.DIV", "WARPSYNC.COLLECTIVE"):
        mine = [i for i in symm.instrs if i.opcode == what or i.opcode.startswith(what + ".")]
        theirs = [i for i in raw.instrs if i.opcode == what or i.opcode.startswith(what + ".")]
        if len(mine) > len(theirs):
            problems.append(f"more {what} in symm ({len(mine)}) than in raw ({len(theirs)}):")
            problems += [f"      symm {i.text()}" for i in mine]
    local = symm.of(LOCAL_OPS)
    if local or symm.local or symm.stack:
        problems.append(f"local memory in the symm kernel (LOCAL:{symm.local} STACK:{symm.stack}):")
        problems += [f"      symm {i.text()}" for i in local]
    if symm.name in FLOAT_LOOP_KERNELS:
        table = [i for i in symm.of({"LDG", "LD"}) if i.in_loop and i.key().split(" ")[0].endswith(".64")]
        if table:
            loops = ", ".join(f"[{lo:04x}, {hi:04x}]" for lo, hi in symm.loops)
            problems.append(f"peer table read in a loop body (loops {loops}): a 64-bit load where the data are 32-bit:")
            problems += [f"      symm {i.text()}" for i in table]
    return problems


def summary(k: Kernel) -> str:
    c = k.multiset(GLOBAL_OPS | SHARED_OPS | LOCAL_OPS, exact=True)
    return " ".join(f"{key.replace(' [loop]', '')}{'@loop' if key.endswith('[loop]') else ''}" + (f"x{n}" if n > 1 else "")
                    for key, n in sorted(c.items(), key=lambda kv: (kv[0].endswith("[loop]"), kv[0])))


def report(level: int, symm: dict[str, Kernel], raw: dict[str, Kernel]) -> bool:
    ok = True
    names = sorted(set(symm) | set(raw))
    check = "with the same PE check" if level else "without a PE check"
    print(f"\nSYMM_CHECK={level} (raw kernels {check})")
    hdr = (f"  {'kernel':10} {'global':>7} {'in loop':>7} {'generic':>7} {'shared':>6} {'local':>5} {'const':>7} {'instrs':>7} "
           f"{'loop ins':>8} {'regs':>7}  result")
    print(hdr + "\n  " + "-" * (len(hdr) - 2))
    details = []
    for n in names:
        if n not in symm or n not in raw:
            ok = False
            print(f"  {n:10} only in {'kernels_symm.cu' if n in symm else 'kernels_raw.cu'}  FAIL")
            continue
        s, r = symm[n], raw[n]
        problems = compare(s, r)
        ok &= not problems

        def pair(f):
            return f"{f(s)}/{f(r)}"

        print(f"  {n:10} {pair(lambda k: len(k.of(GLOBAL_OPS))):>7} "
              f"{pair(lambda k: sum(i.in_loop for i in k.of(GLOBAL_OPS))):>7} {pair(lambda k: len(k.of(GENERIC_OPS))):>7} "
              f"{pair(lambda k: len(k.of(SHARED_OPS))):>6} {pair(lambda k: len(k.of(LOCAL_OPS))):>5} "
              f"{pair(lambda k: len(k.of(CONST_OPS))):>7} {pair(lambda k: len(k.instrs)):>7} "
              f"{pair(Kernel.count_loop_instrs):>8} {pair(lambda k: k.regs):>7}  {'ok' if not problems else 'FAIL'}")
        details.append((n, s, r, problems))
    print("  (symm/raw. global: global and generic memory instructions and fences; in loop: those in loop bodies;\n"
          "   generic: the LD/ST among them; const: kernel-parameter loads, LDC/ULDC, not compared; loop ins: all\n"
          "   instructions in loop bodies. Memory instructions per kernel, @loop = in a loop body:)")
    for n, s, r, problems in details:
        ss, rs = summary(s), summary(r)
        print(f"  {n:10} symm: {ss}" + ("" if ss == rs else f"\n  {'':10} raw:  {rs}"))
        for p in problems:
            print(f"  {'':10} {p}" if not p.startswith("  ") else f"  {'':10}{p}")
    return ok


def check_cost(with_check: dict[str, Kernel], without: dict[str, Kernel]) -> None:
    print("\nPE check cost in the symm kernels (SYMM_CHECK=1 minus SYMM_CHECK=0)")
    for n in sorted(set(with_check) & set(without)):
        a, b = with_check[n], without[n]
        mem = (len(a.of(GLOBAL_OPS | SHARED_OPS | LOCAL_OPS)) - len(b.of(GLOBAL_OPS | SHARED_OPS | LOCAL_OPS)))
        const = len(a.of(CONST_OPS)) - len(b.of(CONST_OPS))
        generic = len(a.of(GENERIC_OPS)) - len(b.of(GENERIC_OPS))
        print(f"  {n:10} {len(a.instrs) - len(b.instrs):+4d} instructions, {a.count_loop_instrs() - b.count_loop_instrs():+3d} "
              f"in loop bodies, {mem:+d} memory ({generic:+d} generic instead of global), {const:+d} parameter loads, "
              f"{(a.regs or 0) - (b.regs or 0):+d} registers")


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--nvcc", default=shutil.which("nvcc") or "/usr/local/cuda/bin/nvcc")
    ap.add_argument("--source-dir", default=str(HERE), help="folder of kernels_symm.cu and kernels_raw.cu")
    ap.add_argument("--include", default=str(HERE.parent.parent / "include"), help="symm's include folder")
    ap.add_argument("--cccl", default=None, help="CCCL headers (default: <toolkit>/include/cccl)")
    ap.add_argument("--arch", default="sm_90")
    ap.add_argument("--cuobjdump", default=None)
    ap.add_argument("--nvdisasm", default=None)
    ap.add_argument("--keep", default=None, help="write the cubins and SASS here instead of a temporary folder")
    ap.add_argument("extra", nargs="*", help="extra nvcc flags (after --), e.g. the library's -D flags")
    args = ap.parse_args()
    nvcc = Path(args.nvcc)
    args.cccl = args.cccl or str(nvcc.resolve().parent.parent / "include" / "cccl")
    args.extra = [f for f in args.extra if not f.startswith("-DSYMM_CHECK=")]
    if not any(f.startswith("-DSYMM_ENABLE_CUDA=") for f in args.extra):
        args.extra.append("-DSYMM_ENABLE_CUDA=1")

    cuobjdump = find_tool("cuobjdump", args.cuobjdump, nvcc)
    nvdisasm = find_tool("nvdisasm", args.nvdisasm, nvcc)
    if cuobjdump is None or nvdisasm is None:
        missing = " and ".join(t for t, p in (("cuobjdump", cuobjdump), ("nvdisasm", nvdisasm)) if p is None)
        print(f"compare_sass: SKIPPED: {missing} not found (next to {nvcc}, on PATH, or from pip). This toolkit ships "
              "only the compiler: `pip install nvidia-cuda-cuobjdump nvidia-cuda-nvdisasm` provides them.")
        return SKIP
    env = dict(os.environ, PATH=f"{nvdisasm.parent}{os.pathsep}{os.environ.get('PATH', '')}")
    print(f"nvcc {nvcc}, {cuobjdump}, arch {args.arch}, flags {' '.join(args.extra)}")

    src = Path(args.source_dir)
    with tempfile.TemporaryDirectory(prefix="symm-sass-") as tmp:
        out = Path(args.keep or tmp)
        out.mkdir(parents=True, exist_ok=True)
        built = {}
        for level in (1, 0):
            built[level] = (build(args, src / "kernels_symm.cu", [f"-DSYMM_CHECK={level}"], out / f"symm{level}.cubin",
                                  cuobjdump, env),
                            build(args, src / "kernels_raw.cu", [f"-DRAW_PE_CHECK={level}"], out / f"raw{level}.cubin",
                                  cuobjdump, env))
        ok = all([report(level, *built[level]) for level in (1, 0)])
        check_cost(built[1][0], built[0][0])
        if args.keep:
            print(f"\ncubins and SASS in {out}")
    print(f"\nsass_zero_cost: {'PASS' if ok else 'FAIL'}")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
