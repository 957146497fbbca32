#!/usr/bin/env python3
"""Tests of benchmarks/report.py (suite 'tools'): ratios per round from median_us, the floor check, the overview and
the list of losing points, on small CSVs written here. Usage: test_report.py REPORT_PY [unittest args]."""
import importlib.util
import os
import sys
import tempfile
import unittest

REPORT = None  # the report module, loaded from argv[1]

HEADER = "impl,benchmark,scope,pes,bytes,iters,median_us,min_us,p90_us,gbps,round,grid,threads,note"
MIB = 1 << 20


def row(impl, bench, scope, nbytes, us, rnd, pes=2, note=""):
    gbps = nbytes / (us * 1e3) if us > 0 else 0.0  # bytes / us = 1e-3 GB/s
    return f"{impl},{bench},{scope},{pes},{nbytes},100,{us},{us},{us},{gbps:.4f},{rnd},132,256,{note}"


class ReportTest(unittest.TestCase):
    def run_report(self, lines):
        d = tempfile.mkdtemp(prefix="symm-report-")
        csv_path = os.path.join(d, "results.csv")
        with open(csv_path, "w") as f:
            f.write("\n".join([HEADER] + lines) + "\n")
        rows = REPORT.read_rows(csv_path)
        impls, ratios, tables, floors, hbm = REPORT.build_tables(rows)
        summary = os.path.join(d, "summary.md")
        violations = REPORT.floor_violations(rows, floors, hbm)
        REPORT.write_summary(summary, impls, ratios, tables, floors, hbm, violations, rows)
        with open(summary) as f:
            return tables, violations, f.read()

    @staticmethod
    def table(tables, bench, scope, pes=2):
        return next(t for t in tables if (t["benchmark"], t["scope"], t["pes"]) == (bench, scope, pes))

    def floor_rows(self, hot_gbps=1900.0, cold_gbps=2000.0, nbytes=256 * MIB):
        us_hot = nbytes / (hot_gbps * 1e3)
        us_cold = nbytes / (cold_gbps * 1e3)
        return [row("raw", "hbm_floor", "block", nbytes, us_hot, 1), row("raw", "hbm_floor", "block_cold", nbytes,
                                                                         us_cold, 1)]

    def test_ratios_come_from_each_rounds_median_us(self):
        # symm is 0.8x raw in round 1 and 1.0x in round 2: the median of the two ratios, with its min and max.
        lines = [row("symm", "put_bw", "block", 4096, 1.25, 1), row("raw", "put_bw", "block", 4096, 1.0, 1),
                 row("symm", "put_bw", "block", 4096, 2.0, 2), row("raw", "put_bw", "block", 4096, 2.0, 2)]
        tables, _, _ = self.run_report(lines)
        rt = self.table(tables, "put_bw", "block")["points"][0]["ratios"]["symm/raw"]
        self.assertAlmostEqual(rt["min"], 0.8)
        self.assertAlmostEqual(rt["max"], 1.0)
        self.assertAlmostEqual(rt["median"], 0.9)
        self.assertEqual(rt["rounds"], 2)

    def test_latency_ratios_are_time_ratios(self):
        lines = [row("symm", "p_lat", "thread", 4, 0.6, 1), row("raw", "p_lat", "thread", 4, 0.5, 1)]
        tables, _, md = self.run_report(lines)
        self.assertAlmostEqual(self.table(tables, "p_lat", "thread")["points"][0]["ratios"]["symm/raw"]["median"], 1.2)
        self.assertIn("| p_lat / thread | 2 | 4 B | symm/raw | 1.20x", md)  # listed as a point where symm is behind

    def test_a_row_above_its_sizes_floor_is_flagged(self):
        lines = self.floor_rows() + [row("symm", "put_bw", "block", 256 * MIB, 256 * MIB / (2100.0 * 1e3), 1)]
        _, violations, md = self.run_report(lines)
        self.assertEqual(len(violations), 1)
        self.assertIn("above the 256 MiB floor", violations[0][1])
        self.assertIn("| symm | put_bw / block | 2 | 256 MiB |", md)

    def test_an_l2_hot_row_beyond_l2_is_held_to_the_hbm_floor(self):
        # 64 MiB has no floor row of its own: beyond L2, the best L2-cold copy bounds it.
        lines = self.floor_rows() + [row("raw", "bidir_put_bw", "block", 64 * MIB, 64 * MIB / (2200.0 * 1e3), 1)]
        _, violations, _ = self.run_report(lines)
        self.assertEqual(len(violations), 1)
        self.assertIn("above the HBM floor (2000.0 GB/s", violations[0][1])

    def test_l2_hot_rows_within_l2_and_rows_under_the_floor_pass(self):
        lines = self.floor_rows() + [
            row("raw", "bidir_put_bw", "block", 16 * MIB, 16 * MIB / (3300.0 * 1e3), 1),  # L2-resident, no floor row
            row("symm", "put_bw", "block_cold", 256 * MIB, 256 * MIB / (2050.0 * 1e3), 1),  # within 5 % of 2000
        ]
        _, violations, md = self.run_report(lines)
        self.assertEqual(violations, [])
        self.assertIn("No bandwidth row above the measured floor.", md)

    def test_the_overview_counts_the_sizes_behind_and_labels_one_cta_nvshmem(self):
        lines = []
        for nbytes, symm_us in ((1024, 1.0), (4096, 2.0), (16384, 3.0)):
            lines += [row("symm", "allreduce_bw", "stream", nbytes, symm_us, 1),
                      row("raw", "allreduce_bw", "stream", nbytes, 1.5, 1),
                      row("nvshmem", "allreduce_bw", "stream", nbytes, 10.0, 1, note="x (1 CTA: NVLS off)")]
        _, _, md = self.run_report(lines)
        line = next(l for l in md.splitlines() if l.startswith("| allreduce_bw / stream | 2 | 3 |"))
        # symm/raw per size: 1.5, 0.75, 0.5 -> lowest 0.50, highest 1.50, two sizes behind.
        self.assertIn("0.50-1.50x (worst round 0.50x; 2 of 3 behind)", line)
        self.assertIn("NVSHMEM: 1 CTA (NVLS off)", line)


if __name__ == "__main__":
    path = sys.argv.pop(1)
    spec = importlib.util.spec_from_file_location("report", path)
    REPORT = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(REPORT)
    unittest.main()
