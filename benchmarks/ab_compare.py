#!/usr/bin/env python3
"""ab_compare.py DIR [BASE]: filtered A/B runs of the bench programs, compared point by point.

DIR holds NAME.rR.csv files, one per program NAME (bench_raw, bench_symm, a variant's wrapper) and round R, as an
interleaved loop writes them:

    for r in 1 2 3; do for b in bench_raw bench_symm variant; do ./$b --pes 2 --filter F --round $r > DIR/$b.r$r.csv; done; done

Rows are labelled by the file's program (bench_ dropped), not by their impl column, so that variants of one
implementation (an environment override, a build of another commit) stay apart. For every point (benchmark, scope,
bytes) it prints BASE's median time and, for every other program, the median over rounds of the per-round ratio
program time / BASE time (below 1: faster than BASE), with the lowest and highest round.
"""
import collections
import csv
import glob
import os
import statistics
import sys


def main() -> int:
    if len(sys.argv) < 2:
        print(__doc__, file=sys.stderr)
        return 64
    directory, base = sys.argv[1], sys.argv[2] if len(sys.argv) > 2 else 'raw'
    times = collections.defaultdict(dict)  # (benchmark, scope, bytes) -> {(label, round): median_us}
    for path in glob.glob(os.path.join(directory, '*.csv')):
        label = os.path.basename(path).split('.')[0].removeprefix('bench_')
        with open(path) as f:
            for row in csv.DictReader(f):
                if row.get('impl') in (None, '', 'impl'):
                    continue
                point = (row['benchmark'], row['scope'], int(row['bytes']))
                times[point][(label, row['round'])] = float(row['median_us'])
    for point in sorted(times):
        by_run = times[point]
        labels = sorted({label for label, _ in by_run})
        if base not in labels:
            continue
        cells = []
        for label in labels:
            if label == base:
                continue
            ratios = [t / by_run[(base, r)] for (l, r), t in by_run.items() if l == label and (base, r) in by_run]
            if ratios:
                cells.append(f'{label} {statistics.median(ratios):.3f} [{min(ratios):.2f}-{max(ratios):.2f}]')
        base_us = statistics.median(t for (l, _), t in by_run.items() if l == base)
        print(f'{point[0]:>18} {point[1]:>12} {point[2]:>10}  {base} {base_us:9.3f} us  ' + '  '.join(cells))
    return 0


if __name__ == '__main__':
    sys.exit(main())
