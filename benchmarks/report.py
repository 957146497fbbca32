#!/usr/bin/env python3
"""Report of the symm / raw CUDA / NVSHMEM comparison suite.

Reads the CSV rows the bench_* programs print
(impl,benchmark,scope,pes,bytes,iters,median_us,min_us,p90_us,gbps,round,grid,threads,note; rows of the older
10-column format count as round 1) and prints one table per benchmark, scope and PE count:

    bytes | symm | raw | nvshmem | floor kernel | floor memcpy | symm/raw | symm/nvshmem | raw/nvshmem

Values are GB/s for bandwidth points (benchmark names ending in _bw, _tput or _rate; the median over rounds) and
microseconds for latency points. Every ratio comes from median_us, never from the rounded gbps column: per round
(run_all.sh runs the implementations interleaved, round by round), the ratio of the two implementations' median_us in
that round; the table shows the median of those ratios and, in brackets, their min-max across rounds. Orientation:
bandwidth ratios are left / right bandwidth (< 1: the left implementation is slower), latency ratios are left / right
time (> 1: the left implementation is slower).

The floor columns are raw's hbm_floor rows at the same size (measured with 2 PEs): the grid-stepped copy kernel and
cudaMemcpyAsync within one PE's memory, L2-cold for *_cold scopes. Two checks flag rows that no copy can reach: a
bandwidth row of 1 MiB or more above 1.05 x the floor of its size and temperature, and any L2-cold row, or any row of
64 MiB or more (beyond L2), above 1.05 x the best L2-cold floor (the measured HBM copy rate).

    report.py results.csv [--json results.json] [--plots DIR] [--summary summary.md]

--summary writes the markdown that docs/benchmarks.md quotes: the HBM floor, per point the median ratio symm/raw and
symm/nvshmem with its min-max across rounds, every point where symm is behind raw or NVSHMEM, and the floor check.
Python standard library only; --plots needs matplotlib and is skipped with a message without it.
"""

import argparse
import csv
import json
import math
import os
import statistics
import sys

COLUMNS = ["impl", "benchmark", "scope", "pes", "bytes", "iters", "median_us", "min_us", "p90_us", "gbps", "round",
           "grid", "threads", "note"]
OLD_COLUMNS = COLUMNS[:10]
IMPL_ORDER = ["symm", "raw", "nvshmem", "symm-nvshmem"]
BASE_RATIOS = [("symm", "raw"), ("symm", "nvshmem"), ("raw", "nvshmem")]
# symm on its nvshmem backend (bench_symm_nvshmem), when it ran: against symm on the cuda backend and against NVSHMEM.
NVSHMEM_BACKEND_RATIOS = [("symm-nvshmem", "symm"), ("symm-nvshmem", "nvshmem")]
FLOOR = "hbm_floor"
FLOOR_TOLERANCE = 1.05
FLOOR_CHECK_MIN_BYTES = 1 << 20
# From this size a copy's source and target (2 x bytes) exceed the L2 of the GPUs measured so far (H200: 60 MiB), so
# even an L2-hot row is bounded by HBM and is checked against the HBM floor too.
BEYOND_L2_BYTES = 64 << 20
BENCH_ORDER = ["hbm_floor", "put_bw", "get_bw", "bidir_put_bw", "column_put_bw", "tile_put_bw", "p_rate", "p_lat",
               "g_lat", "atomic_fetch_add_lat", "atomic_fetch_add_tput", "pingpong", "pingpong_signal", "barrier_lat",
               "halo_step", "broadcast_bw", "fcollect_bw", "alltoall_bw", "allreduce_bw", "reduce_scatter_bw"]


def is_bandwidth(benchmark):
    return benchmark == FLOOR or benchmark.endswith(("_bw", "_tput", "_rate"))


def is_copy(benchmark):
    """Bandwidth points whose bytes are a copy's payload, which the HBM floor bounds."""
    return benchmark.endswith("_bw")


def is_cold(scope):
    return scope.endswith("_cold")


def read_rows(path):
    rows = []
    with open(path, newline="") as f:
        for lineno, fields in enumerate(csv.reader(f), 1):
            if not fields or fields[0].startswith("#") or fields[0].startswith("SKIP") or fields[0] == "impl":
                continue
            if len(fields) == len(OLD_COLUMNS):
                fields = fields + ["1", "0", "0", ""]
            if len(fields) != len(COLUMNS):
                print(f"{path}:{lineno}: ignored (expected {len(COLUMNS)} fields): {','.join(fields)}", file=sys.stderr)
                continue
            r = dict(zip(COLUMNS, fields))
            try:
                for k in ("pes", "bytes", "iters", "round", "grid", "threads"):
                    r[k] = int(r[k])
                for k in ("median_us", "min_us", "p90_us", "gbps"):
                    r[k] = float(r[k])
            except ValueError as e:
                print(f"{path}:{lineno}: ignored ({e})", file=sys.stderr)
                continue
            rows.append(r)
    return rows


def ratio_of(bw, left_us, right_us):
    """Bandwidth: left / right bandwidth = right time / left time. Latency: left time / right time."""
    if not left_us or not right_us or left_us <= 0 or right_us <= 0:
        return None
    return right_us / left_us if bw else left_us / right_us


def behind(bw, r):
    """Whether ratio r says the left implementation is slower."""
    return r is not None and (r < 1 if bw else r > 1)


def geomean(xs):
    xs = [x for x in xs if x]
    return math.exp(sum(math.log(x) for x in xs) / len(xs)) if xs else None


def human_bytes(n):
    for unit, size in (("GiB", 1 << 30), ("MiB", 1 << 20), ("KiB", 1 << 10)):
        if n >= size and n % size == 0:
            return f"{n // size} {unit}"
    return f"{n} B"


def order_key(bench):
    return (BENCH_ORDER.index(bench) if bench in BENCH_ORDER else len(BENCH_ORDER), bench)


def group_rows(rows):
    """{(benchmark, scope, pes): {bytes: {impl: {round: row}}}}."""
    groups = {}
    for r in rows:
        cell = groups.setdefault((r["benchmark"], r["scope"], r["pes"]), {}).setdefault(r["bytes"], {})
        by_round = cell.setdefault(r["impl"], {})
        if r["round"] in by_round:
            print(f"note: several rows for {r['impl']} {r['benchmark']}/{r['scope']} {r['pes']} PEs {r['bytes']} B "
                  f"round {r['round']}, keeping the last", file=sys.stderr)
        by_round[r["round"]] = r
    return groups


def floors_of(groups):
    """{(scope, bytes): median GB/s over rounds} of raw's hbm_floor rows (2 PEs), and the best L2-cold floor."""
    floors = {}
    for (bench, scope, pes), sizes in groups.items():
        if bench != FLOOR:
            continue
        for nbytes, impls in sizes.items():
            for by_round in impls.values():
                floors[(scope, nbytes)] = statistics.median(r["gbps"] for r in by_round.values())
    cold = [v for (scope, _), v in floors.items() if is_cold(scope)]
    return floors, (max(cold) if cold else None)


def floor_pair(floors, scope, nbytes):
    suffix = "_cold" if is_cold(scope) else ""
    return floors.get(("block" + suffix, nbytes)), floors.get(("stream" + suffix, nbytes))


def build_tables(rows):
    impls = [i for i in IMPL_ORDER if any(r["impl"] == i for r in rows)]
    impls += sorted({r["impl"] for r in rows} - set(impls))
    ratios = list(BASE_RATIOS) + (NVSHMEM_BACKEND_RATIOS if "symm-nvshmem" in impls else [])
    groups = group_rows(rows)
    floors, hbm = floors_of(groups)
    tables = []
    for key in sorted(groups, key=lambda k: (order_key(k[0]), k[1], k[2])):
        bench, scope, pes = key
        bw = is_bandwidth(bench)
        points = []
        notes = {}
        for nbytes in sorted(groups[key]):
            cell = groups[key][nbytes]
            p = {"bytes": nbytes, "values": {}, "ratios": {}, "shapes": {}, "rounds": {}}
            for i in impls:
                if i not in cell:
                    continue
                rs = cell[i]
                p["values"][i] = statistics.median(r["gbps"] if bw else r["median_us"] for r in rs.values())
                p["rounds"][i] = sorted(rs)
                shapes = sorted({f"{r['grid']}x{r['threads']}" for r in rs.values() if r["grid"] or r["threads"]})
                p["shapes"][i] = shapes
                for r in rs.values():
                    if r["note"]:
                        notes.setdefault(i, set()).add(r["note"])
            for a, b in ratios:
                if a not in cell or b not in cell:
                    continue
                per_round = [ratio_of(bw, cell[a][k]["median_us"], cell[b][k]["median_us"])
                             for k in sorted(set(cell[a]) & set(cell[b]))]
                per_round = [x for x in per_round if x is not None]
                if per_round:
                    p["ratios"][f"{a}/{b}"] = {"median": statistics.median(per_round), "min": min(per_round),
                                               "max": max(per_round), "rounds": len(per_round)}
            if bw and is_copy(bench) and bench != FLOOR:
                p["floor_kernel"], p["floor_memcpy"] = floor_pair(floors, scope, nbytes)
            points.append(p)
        summary = {}
        for a, b in ratios:
            c = f"{a}/{b}"
            summary[c] = geomean([p["ratios"][c]["median"] for p in points if c in p["ratios"]])
        tables.append({"benchmark": bench, "scope": scope, "pes": pes, "metric": "bandwidth" if bw else "latency",
                       "unit": "GB/s" if bw else "us", "points": points, "geomean": summary,
                       "notes": {i: sorted(n) for i, n in notes.items()}})
    return impls, ratios, tables, floors, hbm


def floor_violations(rows, floors, hbm):
    """Bandwidth rows no copy can reach: above the floor of their size and temperature, or (L2-cold) above HBM.

    bidir_put_bw counts two copies; with both PEs on one GPU (as on the one-GPU machine) they share its HBM, so the
    one-copy floor bounds their sum too. On PEs of different GPUs each GPU does one copy's work and the bound doubles:
    the check then flags what is not wrong (issue 23's runs must compare against 2 x the floor)."""
    out = []
    for r in rows:
        if not is_copy(r["benchmark"]) or r["benchmark"] == FLOOR or r["gbps"] <= 0:
            continue
        fk, fm = floor_pair(floors, r["scope"], r["bytes"])
        best = max([x for x in (fk, fm) if x] or [0])
        if best and r["bytes"] >= FLOOR_CHECK_MIN_BYTES and r["gbps"] > FLOOR_TOLERANCE * best:
            out.append((r, f"above the {human_bytes(r['bytes'])} {'L2-cold ' if is_cold(r['scope']) else ''}floor "
                           f"({best:.1f} GB/s)"))
        elif hbm and (is_cold(r["scope"]) or r["bytes"] >= BEYOND_L2_BYTES) and r["gbps"] > FLOOR_TOLERANCE * hbm:
            out.append((r, f"above the HBM floor ({hbm:.1f} GB/s, best L2-cold copy)"))
    return out


def fmt(x):
    if x is None:
        return "-"
    if x >= 100:
        return f"{x:.1f}"
    if x >= 1:
        return f"{x:.3f}"
    return f"{x:.4f}"


def fmt_ratio(rt, spread=True):
    if not rt:
        return "-"
    s = f"{rt['median']:.2f}x"
    if spread and rt["rounds"] > 1:
        s += f" [{rt['min']:.2f}-{rt['max']:.2f}]"
    return s


def shown_impls(impls):
    return [i for i in IMPL_ORDER if i in impls] + [i for i in impls if i not in IMPL_ORDER]


def table_body(t, impls, ratios):
    has_floor = any("floor_kernel" in p for p in t["points"])
    header = (["bytes"] + impls + (["floor kernel", "floor memcpy"] if has_floor else [])
              + [f"{a}/{b}" for a, b in ratios])
    body = []
    for p in t["points"]:
        row = [human_bytes(p["bytes"])] + [fmt(p["values"].get(i)) for i in impls]
        if has_floor:
            row += [fmt(p.get("floor_kernel")), fmt(p.get("floor_memcpy"))]
        row += [fmt_ratio(p["ratios"].get(f"{a}/{b}")) for a, b in ratios]
        body.append(row)
    if len(t["points"]) > 1:
        body.append(["geomean"] + [""] * (len(header) - 1 - len(ratios))
                    + [f"{t['geomean'][f'{a}/{b}']:.2f}x" if t["geomean"].get(f"{a}/{b}") else "-"
                       for a, b in ratios])
    return header, body


def print_grid(header, body, out):
    """A right-aligned text table: the header, a rule, then the rows."""
    widths = [max(len(str(row[k])) for row in [header] + body) for k in range(len(header))]
    line = lambda cells: " | ".join(str(c).rjust(w) for c, w in zip(cells, widths))
    print(line(header), file=out)
    print("-+-".join("-" * w for w in widths), file=out)
    for row in body:
        print(line(row), file=out)


def orientation_text():
    return ("Ratios come from median_us of each round: median [min-max across rounds]. Bandwidth ratios are left / "
            "right bandwidth (< 1: left slower); latency ratios are left / right time (> 1: left slower).")


def print_tables(impls, ratios, tables, out=sys.stdout):
    shown = shown_impls(impls)
    print(orientation_text(), file=out)
    for t in tables:
        better = "higher is better" if t["metric"] == "bandwidth" else "lower is better"
        print(f"\n## {t['benchmark']} / {t['scope']} / {t['pes']} PEs   (median {t['unit']}, {better})", file=out)
        header, body = table_body(t, shown, ratios)
        print_grid(header, body, out)
        for i, notes in t["notes"].items():
            print(f"  {i}: {'; '.join(notes)}", file=out)


def print_pes_summary(ratios, tables, out=sys.stdout):
    """Geometric-mean ratios per benchmark / scope and PE count, for the benchmarks measured at several PE counts."""
    counts = {}
    for t in tables:
        counts.setdefault((t["benchmark"], t["scope"]), set()).add(t["pes"])
    multi = [t for t in tables if len(counts[(t["benchmark"], t["scope"])]) > 1]
    if not multi:
        return
    cols = [f"{a}/{b}" for a, b in ratios]
    print("\n## Summary by PE count   (geomean over sizes of each point's median ratio)", file=out)
    header = ["benchmark / scope", "PEs", "sizes"] + cols
    body = [[f"{t['benchmark']} / {t['scope']}", str(t["pes"]), str(len(t["points"]))]
            + [f"{t['geomean'][c]:.2f}x" if t["geomean"].get(c) else "-" for c in cols] for t in multi]
    print_grid(header, body, out)


def md_table(header, body):
    lines = ["| " + " | ".join(header) + " |", "| " + " | ".join("---" for _ in header) + " |"]
    lines += ["| " + " | ".join(str(c) for c in row) + " |" for row in body]
    return "\n".join(lines)


def overview_section(tables, wanted):
    """One line per benchmark, scope and PE count: over its sizes, the lowest and highest median ratio, the lowest
    single-round ratio, and how many sizes are behind (the numbers docs/benchmarks.md quotes)."""
    md = ["## Overview (per point over its sizes: median ratios lowest-highest, the worst round, sizes behind)", ""]
    body = []
    for t in tables:
        if t["benchmark"] == FLOOR:
            continue
        bw = t["metric"] == "bandwidth"
        row = [f"{t['benchmark']} / {t['scope']}", str(t["pes"]), str(len(t["points"]))]
        for c in wanted:
            rts = [p["ratios"][c] for p in t["points"] if p["ratios"].get(c)]
            if not rts:
                row.append("-")
                continue
            meds = [r["median"] for r in rts]
            # The worst round: the lowest bandwidth ratio, the highest latency ratio.
            worst = min(r["min"] for r in rts) if bw else max(r["max"] for r in rts)
            n_behind = sum(behind(bw, m) for m in meds)
            row.append(f"{min(meds):.2f}-{max(meds):.2f}x (worst round {worst:.2f}x; {n_behind} of {len(meds)} "
                       f"behind)")
        notes = sorted({n for ns in t["notes"].values() for n in ns if "1 CTA" in n})
        row.append("NVSHMEM: 1 CTA (NVLS off)" if notes else "")
        body.append(row)
    header = ["point", "PEs", "sizes"] + wanted + ["note"]
    return md + [md_table(header, body), ""]


def write_summary(path, impls, ratios, tables, floors, hbm, violations, rows, env_path=None):
    shown = shown_impls(impls)
    rounds = sorted({r["round"] for r in rows})
    md = ["# Benchmark summary (generated by benchmarks/report.py from results.csv)", ""]
    if env_path and os.path.exists(env_path):
        with open(env_path) as f:
            keep = [l.rstrip() for l in f if l.split(":")[0] in ("date", "gpu", "commit", "build", "MPS", "nvcc",
                                                                 "point budget", "elapsed", "program")]
        md += ["```"] + keep + ["```", ""]
    md += [f"Rounds: {', '.join(map(str, rounds))}. " + orientation_text(), ""]
    # The floor.
    md += ["## HBM floor (raw's copies within one PE's memory, 2 PEs)", ""]
    sizes = sorted({b for (_, b) in floors})
    if sizes:
        scopes = ["block", "stream", "block_cold", "stream_cold"]
        names = ["copy kernel, L2-hot", "cudaMemcpyAsync, L2-hot", "copy kernel, L2-cold", "cudaMemcpyAsync, L2-cold"]
        body = [[human_bytes(b)] + [fmt(floors.get((s, b))) for s in scopes] for b in sizes]
        md += [md_table(["bytes"] + [f"{n} (GB/s)" for n in names], body), ""]
        md += [f"HBM floor (best L2-cold copy): {fmt(hbm)} GB/s." if hbm else "No L2-cold floor rows.", ""]
    else:
        md += ["No hbm_floor rows (bench_raw did not run).", ""]
    wanted = [c for c in ("symm/raw", "symm/nvshmem") if any(f"{a}/{b}" == c for a, b in ratios)]
    md += overview_section(tables, wanted)
    # Per point ratios.
    md += ["## Per point: symm against raw and NVSHMEM", ""]
    for t in tables:
        if t["benchmark"] == FLOOR:
            continue
        md += [f"### {t['benchmark']} / {t['scope']} / {t['pes']} PEs ({t['unit']}, median over rounds)", ""]
        has_floor = any("floor_kernel" in p for p in t["points"])
        header = ["bytes"] + shown + (["floor kernel", "floor memcpy"] if has_floor else []) + wanted
        body = []
        for p in t["points"]:
            row = [human_bytes(p["bytes"])] + [fmt(p["values"].get(i)) for i in shown]
            if has_floor:
                row += [fmt(p.get("floor_kernel")), fmt(p.get("floor_memcpy"))]
            row += [fmt_ratio(p["ratios"].get(c)) for c in wanted]
            body.append(row)
        md += [md_table(header, body), ""]
        for i, notes in t["notes"].items():
            md += [f"- {i}: {'; '.join(notes)}"]
        if t["notes"]:
            md += [""]
    # Where symm is behind.
    md += ["## Where symm is behind (median ratio < 1 for bandwidth, > 1 for latency)", ""]
    behind_rows = []
    for t in tables:
        bw = t["metric"] == "bandwidth"
        for p in t["points"]:
            for c in wanted:
                rt = p["ratios"].get(c)
                if rt and behind(bw, rt["median"]):
                    behind_rows.append([f"{t['benchmark']} / {t['scope']}", str(t["pes"]), human_bytes(p["bytes"]),
                                        c, fmt_ratio(rt)])
    md += [md_table(["point", "PEs", "bytes", "ratio", "median [min-max]"], behind_rows) if behind_rows
           else "None.", ""]
    # The floor check.
    md += ["## Floor check (rows no copy can reach)", ""]
    if violations:
        body = [[r["impl"], f"{r['benchmark']} / {r['scope']}", str(r["pes"]), human_bytes(r["bytes"]),
                 str(r["round"]), fmt(r["gbps"]), why] for r, why in violations]
        md += [md_table(["impl", "point", "PEs", "bytes", "round", "GB/s", "why"], body), ""]
    else:
        md += ["No bandwidth row above the measured floor." if floors else "Not checked: no hbm_floor rows.", ""]
    with open(path, "w") as f:
        f.write("\n".join(md))


def write_plots(impls, tables, floors, directory):
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
        present = [i for i in impls if any(p["values"].get(i) for p in t["points"])]
        if len(t["points"]) > 1:
            for i in present:
                xs = [p["bytes"] for p in t["points"] if p["values"].get(i)]
                ys = [p["values"][i] for p in t["points"] if p["values"].get(i)]
                ax.plot(xs, ys, marker="o", markersize=3, label=i)
            for key, name in (("floor_kernel", "floor: copy kernel"), ("floor_memcpy", "floor: cudaMemcpyAsync")):
                pts = [(p["bytes"], p[key]) for p in t["points"] if p.get(key)]
                if pts:
                    ax.plot([x for x, _ in pts], [y for _, y in pts], linestyle="--", color="gray",
                            alpha=0.8 if key == "floor_kernel" else 0.5, label=name)
            ax.set_xscale("log", base=2)
            ax.set_yscale("log")
            ax.set_xlabel("bytes")
            ax.grid(True, which="both", alpha=0.3)
            ax.legend()
        else:
            p = t["points"][0]
            ax.bar(present, [p["values"][i] for i in present])
            ax.set_xlabel(f"{human_bytes(p['bytes'])}" if p["bytes"] else "")
            for key in ("floor_kernel", "floor_memcpy"):
                if p.get(key):
                    ax.axhline(p[key], linestyle="--", color="gray", label=key.replace("_", ": "))
        ax.set_ylabel(label)
        ax.set_title(f"{t['benchmark']} / {t['scope']} / {t['pes']} PEs")
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
    ap.add_argument("--plots", metavar="DIR", help="write PNG plots (log-log vs size, with the floor) into DIR")
    ap.add_argument("--summary", metavar="MD", help="write the markdown summary (ratios, floor, where symm is behind)")
    ap.add_argument("--env", help="env.txt whose commit, build and date lines head the summary (default: beside the CSV)")
    args = ap.parse_args(argv)

    rows = read_rows(args.csv)
    if not rows:
        print(f"{args.csv}: no result rows", file=sys.stderr)
        return 1
    impls, ratios, tables, floors, hbm = build_tables(rows)
    print_tables(impls, ratios, tables)
    print_pes_summary(ratios, tables)
    violations = floor_violations(rows, floors, hbm)
    print(f"\n## Floor check: {len(violations)} bandwidth rows above the measured floor", file=sys.stdout)
    for r, why in violations:
        print(f"  {r['impl']} {r['benchmark']}/{r['scope']} {r['pes']} PEs {human_bytes(r['bytes'])} round "
              f"{r['round']}: {r['gbps']:.1f} GB/s, {why}")
    if args.summary:
        env = args.env or os.path.join(os.path.dirname(os.path.abspath(args.csv)), "env.txt")
        write_summary(args.summary, impls, ratios, tables, floors, hbm, violations, rows, env)
        print(f"summary: {args.summary}", file=sys.stderr)
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"columns": COLUMNS, "ratio_note": orientation_text(), "impls": impls, "tables": tables,
                       "hbm_floor_gbps": hbm, "floor_violations": [dict(r, why=w) for r, w in violations],
                       "rows": rows}, f, indent=1)
    if args.plots:
        write_plots(impls, tables, floors, args.plots)
    return 0


if __name__ == "__main__":
    sys.exit(main())
