#!/usr/bin/env python3
"""Report of the symm / raw CUDA / NVSHMEM comparison suite.

Reads the CSV rows the bench_* programs print (impl,benchmark,scope,pes,bytes,iters,median_us,min_us,p90_us,gbps),
prints one table per benchmark, scope and PE count (the collective points run with 2, 4, 8 PEs; the others with 2):

    bytes | symm | raw | nvshmem | symm/raw | symm/nvshmem | raw/nvshmem

then, when some benchmark ran at several PE counts, a summary of the geometric-mean ratios per benchmark and PE count.

Values are GB/s (median) for bandwidth points (benchmark names ending in _bw or _tput) and microseconds (median)
for latency points. Every ratio is oriented so that > 1 means the left implementation is better: bandwidth ratios
are left/right, latency ratios are right/left.

    report.py results.csv [--json results.json] [--plots DIR]

Python standard library only; --plots needs matplotlib and is skipped with a message without it.
"""

import argparse
import csv
import json
import math
import os
import sys

COLUMNS = ["impl", "benchmark", "scope", "pes", "bytes", "iters", "median_us", "min_us", "p90_us", "gbps"]
IMPL_ORDER = ["symm", "raw", "nvshmem", "symm-nvshmem"]
RATIOS = [("symm", "raw"), ("symm", "nvshmem"), ("raw", "nvshmem")]
# symm on its nvshmem backend (bench_symm_nvshmem), when it ran: against symm on the cuda backend and against NVSHMEM.
NVSHMEM_BACKEND_RATIOS = [("symm-nvshmem", "symm"), ("symm-nvshmem", "nvshmem")]


def is_bandwidth(benchmark):
    return benchmark.endswith("_bw") or benchmark.endswith("_tput")


def read_rows(path):
    rows = []
    with open(path, newline="") as f:
        for lineno, fields in enumerate(csv.reader(f), 1):
            if not fields or fields[0].startswith("#") or fields[0].startswith("SKIP") or fields[0] == "impl":
                continue
            if len(fields) != len(COLUMNS):
                print(f"{path}:{lineno}: ignored (expected {len(COLUMNS)} fields): {','.join(fields)}", file=sys.stderr)
                continue
            r = dict(zip(COLUMNS, fields))
            try:
                for k in ("pes", "bytes", "iters"):
                    r[k] = int(r[k])
                for k in ("median_us", "min_us", "p90_us", "gbps"):
                    r[k] = float(r[k])
            except ValueError as e:
                print(f"{path}:{lineno}: ignored ({e})", file=sys.stderr)
                continue
            rows.append(r)
    return rows


def value(row):
    """The compared figure: GB/s for bandwidth points, median microseconds for latency points."""
    return row["gbps"] if is_bandwidth(row["benchmark"]) else row["median_us"]


def ratio(bw, left, right):
    """> 1 means `left` is better."""
    if left is None or right is None or left <= 0 or right <= 0:
        return None
    return left / right if bw else right / left


def geomean(xs):
    xs = [x for x in xs if x]
    return math.exp(sum(math.log(x) for x in xs) / len(xs)) if xs else None


def human_bytes(n):
    for unit, size in (("GiB", 1 << 30), ("MiB", 1 << 20), ("KiB", 1 << 10)):
        if n >= size and n % size == 0:
            return f"{n // size} {unit}"
    return f"{n} B"


def build_tables(rows):
    impls = [i for i in IMPL_ORDER if any(r["impl"] == i for r in rows)]
    impls += sorted({r["impl"] for r in rows} - set(impls))
    if "symm-nvshmem" in impls:
        RATIOS.extend(r for r in NVSHMEM_BACKEND_RATIOS if r not in RATIOS)
    groups = {}
    for r in rows:
        key = (r["benchmark"], r["scope"], r["pes"])
        cell = groups.setdefault(key, {}).setdefault(r["bytes"], {})
        if r["impl"] in cell:
            print(f"note: several rows for {r['impl']} {key} {r['bytes']} B, keeping the last", file=sys.stderr)
        cell[r["impl"]] = r
    tables = []
    for (bench, scope, pes) in sorted(groups, key=lambda k: (order_key(k[0]), k[1], k[2])):
        bw = is_bandwidth(bench)
        points = []
        for nbytes in sorted(groups[(bench, scope, pes)]):
            cell = groups[(bench, scope, pes)][nbytes]
            p = {"bytes": nbytes}
            for i in impls:
                p[i] = value(cell[i]) if i in cell else None
            for a, b in RATIOS:
                p[f"{a}/{b}"] = ratio(bw, p.get(a), p.get(b))
            points.append(p)
        summary = {f"{a}/{b}": geomean([p[f"{a}/{b}"] for p in points]) for a, b in RATIOS}
        tables.append({"benchmark": bench, "scope": scope, "pes": pes, "metric": "bandwidth" if bw else "latency",
                       "unit": "GB/s" if bw else "us", "points": points, "geomean": summary})
    return impls, tables


def order_key(bench):
    order = ["put_bw", "get_bw", "p_lat", "g_lat", "atomic_fetch_add_lat", "atomic_fetch_add_tput", "pingpong",
             "pingpong_signal", "barrier_lat", "broadcast_bw", "fcollect_bw", "alltoall_bw", "allreduce_bw",
             "reduce_scatter_bw"]
    return (order.index(bench) if bench in order else len(order), bench)


def fmt(x, ratio_col=False):
    if x is None:
        return "-"
    if ratio_col:
        return f"{x:.2f}x"
    if x >= 100:
        return f"{x:.1f}"
    if x >= 1:
        return f"{x:.3f}"
    return f"{x:.4f}"


def print_grid(header, body, out):
    """A right-aligned text table: the header, a rule, then the rows."""
    widths = [max(len(str(row[k])) for row in [header] + body) for k in range(len(header))]
    line = lambda cells: " | ".join(str(c).rjust(w) for c, w in zip(cells, widths))
    print(line(header), file=out)
    print("-+-".join("-" * w for w in widths), file=out)
    for row in body:
        print(line(row), file=out)


def print_tables(impls, tables, out=sys.stdout):
    shown = [i for i in IMPL_ORDER if i in impls or i != "symm-nvshmem"] + [i for i in impls if i not in IMPL_ORDER]
    ratio_cols = [f"{a}/{b}" for a, b in RATIOS]
    print("Ratios > 1 mean the left implementation is better: bandwidth ratios are left/right, latency ratios "
          "right/left.", file=out)
    for t in tables:
        better = "higher is better" if t["metric"] == "bandwidth" else "lower is better"
        print(f"\n## {t['benchmark']} / {t['scope']} / {t['pes']} PEs   (median {t['unit']}, {better})", file=out)
        header = ["bytes"] + shown + ratio_cols
        body = [[human_bytes(p["bytes"])] + [fmt(p.get(i)) for i in shown] + [fmt(p[c], True) for c in ratio_cols]
                for p in t["points"]]
        if len(t["points"]) > 1:
            body.append(["geomean"] + [""] * len(shown) + [fmt(t["geomean"][c], True) for c in ratio_cols])
        print_grid(header, body, out)


def print_pes_summary(tables, out=sys.stdout):
    """Geometric-mean ratios per benchmark / scope and PE count, for the benchmarks measured at several PE counts."""
    counts = {}
    for t in tables:
        counts.setdefault((t["benchmark"], t["scope"]), set()).add(t["pes"])
    multi = [t for t in tables if len(counts[(t["benchmark"], t["scope"])]) > 1]
    if not multi:
        return
    ratio_cols = [f"{a}/{b}" for a, b in RATIOS]
    print("\n## Summary by PE count   (geomean over sizes of each ratio; > 1: the left implementation is better)",
          file=out)
    header = ["benchmark / scope", "PEs", "sizes"] + ratio_cols
    body = [[f"{t['benchmark']} / {t['scope']}", str(t["pes"]), str(len(t["points"]))]
            + [fmt(t["geomean"][c], True) for c in ratio_cols] for t in multi]
    print_grid(header, body, out)


def write_plots(impls, tables, directory):
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        print("plots skipped: matplotlib is not installed (pip install matplotlib)", file=sys.stderr)
        return []
    os.makedirs(directory, exist_ok=True)
    written = []
    for t in tables:
        fig, ax = plt.subplots(figsize=(7, 4.5))
        label = "bandwidth (GB/s)" if t["metric"] == "bandwidth" else "latency (us)"
        present = [i for i in impls if any(p.get(i) for p in t["points"])]
        if len(t["points"]) > 1:
            for i in present:
                xs = [p["bytes"] for p in t["points"] if p.get(i)]
                ys = [p[i] for p in t["points"] if p.get(i)]
                ax.plot(xs, ys, marker="o", markersize=3, label=i)
            ax.set_xscale("log", base=2)
            ax.set_yscale("log")
            ax.set_xlabel("bytes")
            ax.grid(True, which="both", alpha=0.3)
        else:
            p = t["points"][0]
            ax.bar(present, [p[i] for i in present])
            ax.set_xlabel(f"{human_bytes(p['bytes'])}" if p["bytes"] else "")
        ax.set_ylabel(label)
        ax.set_title(f"{t['benchmark']} / {t['scope']} / {t['pes']} PEs")
        if present and len(t["points"]) > 1:
            ax.legend()
        fig.tight_layout()
        # 2-PE plots keep their names of the 2-PE suite; other PE counts get a suffix.
        suffix = "" if t["pes"] == 2 else f"_{t['pes']}pes"
        path = os.path.join(directory, f"{t['benchmark']}_{t['scope']}{suffix}.png")
        fig.savefig(path, dpi=110)
        plt.close(fig)
        written.append(path)
    print(f"plots: {len(written)} PNG files in {directory}", file=sys.stderr)
    return written


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("csv", help="results.csv (rows of every bench_* program; header, '#' and SKIP lines ignored)")
    ap.add_argument("--json", help="write the tables and the rows as JSON to this file")
    ap.add_argument("--plots", metavar="DIR", help="write PNG plots (log-log vs size) per benchmark into DIR")
    args = ap.parse_args(argv)

    rows = read_rows(args.csv)
    if not rows:
        print(f"{args.csv}: no result rows", file=sys.stderr)
        return 1
    impls, tables = build_tables(rows)
    print_tables(impls, tables)
    print_pes_summary(tables)
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"columns": COLUMNS, "ratio_note": "> 1 means the left implementation is better",
                       "impls": impls, "tables": tables, "rows": rows}, f, indent=1)
    if args.plots:
        write_plots(impls, tables, args.plots)
    return 0


if __name__ == "__main__":
    sys.exit(main())
