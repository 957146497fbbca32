#!/usr/bin/env python3
"""Tests of the symmrun launcher: the environment each PE gets, the job directory, exit statuses,
taking a job down when one PE fails, --tag-output, --timeout, signals and the CUDA MPS handling.

Usage: test_symmrun.py SYMMRUN PROBE [unittest arguments, e.g. -k FailureTest]

PROBE is tests/tools/symmrun_probe: each PE writes OUTDIR/pe-K.txt with its pid and what it saw, so
the tests can check every PE and then check that none of their processes is left. No GPU is needed:
fake nvidia-smi and nvidia-cuda-mps-control scripts stand in for the driver's tools.
"""

import os
import re
import shutil
import signal
import stat
import subprocess
import sys
import tempfile
import textwrap
import time
import unittest

SYMMRUN = ""
PROBE = ""

# Generous for slow CI machines, but far below the tests' own 60 s limit.
RUN_LIMIT_S = 20


def alive(pid):
    """True if pid is a live process (a zombie counts as dead: it can no longer run)."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            state = f.read().rsplit(")", 1)[1].split()[0]
    except (FileNotFoundError, ProcessLookupError):
        return False
    return state not in ("Z", "X")


def wait_until(condition, limit_s, step_s=0.01):
    deadline = time.monotonic() + limit_s
    while time.monotonic() < deadline:
        if condition():
            return True
        time.sleep(step_s)
    return condition()


def default_signals():
    # The test runner may ignore SIGINT; an ignored signal would be inherited by symmrun and the PEs.
    for sig in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP, signal.SIGPIPE):
        signal.signal(sig, signal.SIG_DFL)


class SymmrunTestCase(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.mkdtemp(prefix="symmrun-test-")
        self.outdir = os.path.join(self.tmp, "out")
        self.runtime_dir = os.path.join(self.tmp, "runtime")  # XDG_RUNTIME_DIR: job directories go here
        self.bin = os.path.join(self.tmp, "bin")  # fake NVIDIA tools
        for d in (self.outdir, self.runtime_dir, self.bin):
            os.mkdir(d, 0o700)
        self.env = dict(os.environ)
        self.env["XDG_RUNTIME_DIR"] = self.runtime_dir
        # No real nvidia-smi may change the outcome; tests that want one install a fake.
        self.env["PATH"] = f"{self.bin}:/usr/bin:/bin"
        for name in ("CUDA_MPS_PIPE_DIRECTORY", "CUDA_MPS_LOG_DIRECTORY", "SYMM_DEVICE"):
            self.env.pop(name, None)
        self.pids = []  # every process a PE reported, checked in tearDown

    def tearDown(self):
        try:
            leftover = [pid for pid in self.pids if alive(pid)]
            for pid in leftover:
                os.kill(pid, signal.SIGKILL)
            self.assertEqual(leftover, [], "processes of the job outlived symmrun")
        finally:
            shutil.rmtree(self.tmp, ignore_errors=True)

    # -- running symmrun

    def symmrun(self, *args, env=None, stdin=subprocess.DEVNULL):
        """Runs symmrun to its end; returns (CompletedProcess, seconds it took)."""
        start = time.monotonic()
        done = subprocess.run([SYMMRUN, *map(str, args)], env=env or self.env, stdin=stdin, capture_output=True,
                              text=True, timeout=RUN_LIMIT_S, preexec_fn=default_signals)
        return done, time.monotonic() - start

    def start_symmrun(self, *args):
        return subprocess.Popen([SYMMRUN, *map(str, args)], env=self.env, stdin=subprocess.DEVNULL,
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                                preexec_fn=default_signals)

    def probe(self, npes, *probe_args, options=()):
        return self.symmrun("-n", npes, *options, PROBE, self.outdir, *probe_args)

    # -- what the PEs reported

    def reports(self, npes):
        """{pe: {key: value}} from the probe files; also records every pid for tearDown."""
        result = {}
        for pe in range(npes):
            path = os.path.join(self.outdir, f"pe-{pe}.txt")
            self.assertTrue(os.path.exists(path), f"PE {pe} did not run")
            with open(path) as f:
                result[pe] = dict(line.split("=", 1) for line in f.read().splitlines())
            self.pids += [int(result[pe][key]) for key in ("pid", "child") if key in result[pe]]
        return result

    def wait_for_reports(self, npes, limit_s=10):
        ready = wait_until(lambda: all(os.path.exists(os.path.join(self.outdir, f"pe-{pe}.txt"))
                                       for pe in range(npes)), limit_s)
        self.assertTrue(ready, "the PEs did not start")
        return self.reports(npes)

    def assert_all_gone(self, reports, limit_s=0.5):
        pids = [int(r[key]) for r in reports.values() for key in ("pid", "child") if key in r]
        self.assertTrue(wait_until(lambda: not any(alive(p) for p in pids), limit_s),
                        f"still alive: {[p for p in pids if alive(p)]}")

    def job_directories(self):
        return os.listdir(self.runtime_dir)

    # -- fake NVIDIA tools

    def install_script(self, name, body):
        path = os.path.join(self.bin, name)
        with open(path, "w") as f:
            f.write("#!/bin/sh\n" + textwrap.dedent(body))
        os.chmod(path, 0o755)
        return path

    def fake_nvidia_smi(self, gpus, status=0):
        lines = "".join(f'echo "GPU {i}: NVIDIA H200 (UUID: GPU-0000000{i})"\n' for i in range(gpus))
        self.install_script("nvidia-smi", f'[ "$1" = -L ] || exit 9\n{lines}exit {status}\n')


class EnvironmentTest(SymmrunTestCase):
    def test_every_pe_gets_its_variables(self):
        done, _ = self.probe(4, "--sleep", "0.2")
        self.assertEqual(done.returncode, 0, done.stderr)
        reports = self.reports(4)
        job_dir = reports[0]["SYMM_JOB_DIR"]
        token = reports[0]["SYMM_JOB_TOKEN"]
        self.assertRegex(token, r"^[0-9a-f]{32}$")
        self.assertEqual(os.path.dirname(job_dir), self.runtime_dir)
        self.assertRegex(os.path.basename(job_dir), r"^job-[0-9a-f]+$")
        for pe, report in reports.items():
            self.assertEqual(report["SYMM_PE"], str(pe))
            self.assertEqual(report["SYMM_N_PES"], "4")
            self.assertEqual(report["SYMM_LOCAL_PE"], str(pe))
            self.assertEqual(report["SYMM_LOCAL_N_PES"], "4")
            self.assertEqual(report["SYMM_JOB_DIR"], job_dir)
            self.assertEqual(report["SYMM_JOB_TOKEN"], token)
            self.assertNotIn("SYMM_DEVICE", report)
            # While the job ran, its directory was private.
            self.assertEqual(report["job_dir_is_dir"], "1")
            self.assertEqual(report["job_dir_mode"], "0700")
            self.assertEqual(report["job_dir_uid"], str(os.getuid()))
            # One process group for the whole job, so symmrun can signal it at once.
            self.assertEqual(report["pgid"], reports[0]["pid"])
        self.assertFalse(os.path.exists(job_dir), "the job directory outlived the job")
        self.assertEqual(self.job_directories(), [])

    def test_variables_already_set_are_replaced(self):
        self.env.update(SYMM_PE="77", SYMM_N_PES="77", SYMM_JOB_DIR="/nowhere", SYMM_JOB_TOKEN="x")
        done, _ = self.probe(2)
        self.assertEqual(done.returncode, 0, done.stderr)
        reports = self.reports(2)
        self.assertEqual([r["SYMM_PE"] for r in reports.values()], ["0", "1"])
        self.assertEqual(reports[1]["SYMM_N_PES"], "2")
        self.assertNotEqual(reports[1]["SYMM_JOB_DIR"], "/nowhere")
        self.assertRegex(reports[1]["SYMM_JOB_TOKEN"], r"^[0-9a-f]{32}$")

    def test_each_job_gets_a_new_token(self):
        self.probe(1)
        first = self.reports(1)[0]["SYMM_JOB_TOKEN"]
        os.remove(os.path.join(self.outdir, "pe-0.txt"))
        self.probe(1)
        self.assertNotEqual(self.reports(1)[0]["SYMM_JOB_TOKEN"], first)

    def test_job_directory_in_tmp_without_runtime_dir(self):
        del self.env["XDG_RUNTIME_DIR"]
        done, _ = self.probe(2)
        self.assertEqual(done.returncode, 0, done.stderr)
        job_dir = self.reports(2)[0]["SYMM_JOB_DIR"]
        base = f"/tmp/symm-{os.getuid()}"
        self.assertEqual(os.path.dirname(job_dir), base)
        info = os.lstat(base)
        self.assertTrue(stat.S_ISDIR(info.st_mode), "the base is not a real directory")
        self.assertEqual(stat.S_IMODE(info.st_mode), 0o700)
        self.assertEqual(info.st_uid, os.getuid())
        self.assertFalse(os.path.exists(job_dir))

    def test_unusable_runtime_dir_falls_back_to_tmp(self):
        self.env["XDG_RUNTIME_DIR"] = os.path.join(self.tmp, "does-not-exist")
        done, _ = self.probe(1)
        self.assertEqual(done.returncode, 0, done.stderr)
        self.assertTrue(self.reports(1)[0]["SYMM_JOB_DIR"].startswith(f"/tmp/symm-{os.getuid()}/job-"))

    def test_gpus_are_given_round_robin(self):
        done, _ = self.probe(5, options=("--gpus", "2,0,1"))
        self.assertEqual(done.returncode, 0, done.stderr)
        reports = self.reports(5)
        self.assertEqual([reports[pe]["SYMM_DEVICE"] for pe in range(5)], ["2", "0", "1", "2", "0"])

    def test_short_lived_pes(self):
        # PE 0 leads the job's process group; it may exit before the last PE joins the group.
        done, _ = self.symmrun("-n", 8, "true")
        self.assertEqual(done.returncode, 0, done.stderr)
        self.assertEqual(self.job_directories(), [])

    def test_only_pe_0_reads_stdin(self):
        done = subprocess.run([SYMMRUN, "-n", "3", "sh", "-c", "cat"], env=self.env, input="hello\n",
                              capture_output=True, text=True, timeout=RUN_LIMIT_S)
        self.assertEqual(done.returncode, 0, done.stderr)
        self.assertEqual(done.stdout, "hello\n")


    def test_rank_variables_set_to_garbage(self):
        # Without symmrun (which would replace them), a symm PE reads the launcher's variables itself: a bad value
        # is an error naming the variable and the value, before anything is set up.
        launcher_variables = ("SYMM_PE", "SYMM_N_PES", "SYMM_LOCAL_PE", "SYMM_LOCAL_N_PES", "SYMM_JOB_DIR",
                              "SYMM_JOB_TOKEN", "OMPI_COMM_WORLD_RANK", "OMPI_COMM_WORLD_SIZE", "PMI_RANK", "PMI_SIZE",
                              "SLURM_PROCID", "SLURM_NTASKS", "SLURM_LOCALID", "RANK", "WORLD_SIZE")
        job_dir = os.path.join(self.runtime_dir, "job-garbage")
        cases = [
            ({"SYMM_PE": "abc", "SYMM_N_PES": "2"}, "environment variable SYMM_PE='abc' is not a non-negative integer"),
            ({"SYMM_PE": "-1", "SYMM_N_PES": "2"}, "SYMM_PE='-1' is not a non-negative integer"),
            ({"SYMM_PE": "1x", "SYMM_N_PES": "2"}, "SYMM_PE='1x' is not a non-negative integer"),
            ({"SYMM_PE": "", "SYMM_N_PES": "2"}, "SYMM_PE='' is not a non-negative integer"),
            ({"SYMM_PE": "0", "SYMM_N_PES": "two"}, "SYMM_N_PES='two' is not a non-negative integer"),
            ({"SYMM_PE": "0", "SYMM_N_PES": "99999999999"}, "SYMM_N_PES='99999999999' is too large: at most 2147483647"),
            ({"SYMM_PE": "0", "SYMM_N_PES": "2", "SYMM_LOCAL_PE": "x"}, "SYMM_LOCAL_PE='x'"),
            ({"SYMM_PE": "2", "SYMM_N_PES": "2"}, "rank 2 is not below the job size 2"),
            ({"SYMM_PE": "0", "SYMM_N_PES": "0"}, "the job size is 0, it must be at least 1"),
            ({"SYMM_PE": "0"}, "SYMM_PE is set but SYMM_N_PES is not"),
            ({"SYMM_PE": "0", "SYMM_N_PES": "1", "SYMM_JOB_DIR": None}, "SYMM_PE is set but SYMM_JOB_DIR is not"),
            ({"OMPI_COMM_WORLD_RANK": "one", "OMPI_COMM_WORLD_SIZE": "2"}, "OMPI_COMM_WORLD_RANK='one'"),
            ({"SLURM_PROCID": "0", "SLURM_NTASKS": "-2"}, "SLURM_NTASKS='-2'"),
            ({"RANK": "0", "WORLD_SIZE": "4.0"}, "WORLD_SIZE='4.0'"),
        ]
        for variables, message in cases:
            with self.subTest(variables=variables):
                env = {k: v for k, v in self.env.items() if k not in launcher_variables}
                env["SYMM_JOB_DIR"] = job_dir
                env.update(variables)
                env = {k: v for k, v in env.items() if v is not None}
                done = subprocess.run([PROBE, self.outdir, "--symm", "barrier"], env=env, capture_output=True,
                                      text=True, timeout=RUN_LIMIT_S)
                self.assertEqual(done.returncode, 3, done.stderr)
                self.assertIn(message, done.stderr)
                self.assertIn("[environment at", done.stderr)
                self.assertFalse(os.path.exists(job_dir), "nothing may be set up with a bad rank variable")


class CommandLineTest(SymmrunTestCase):
    def test_bad_number_of_pes(self):
        for value in ("0", "-1", "-3", "abc", "99999", "4097", "1.5", "2x", " 2", "0x4", ""):
            for args in (["-n", value], [f"--npes={value}"]):
                with self.subTest(args=args):
                    done, _ = self.symmrun(*args, "true")
                    self.assertEqual(done.returncode, 2, done.stderr)
                    self.assertIn(f"invalid number of PEs '{value}'", done.stderr)
                    self.assertIn("1 to 4096", done.stderr)

    def test_largest_and_compact_forms(self):
        for args in (["-n4"], ["--npes", "4"], ["--npes=4"], ["-n", "4", "--"]):
            with self.subTest(args=args):
                done, _ = self.symmrun(*args, "true")
                self.assertEqual(done.returncode, 0, done.stderr)

    def test_missing_number_of_pes(self):
        done, _ = self.symmrun("true")
        self.assertEqual(done.returncode, 2)
        self.assertIn("missing -n", done.stderr)
        done, _ = self.symmrun("-n")
        self.assertEqual(done.returncode, 2)
        self.assertIn("-n needs a value", done.stderr)

    def test_option_given_twice(self):
        for args in (["-n", "2", "-n", "3"], ["-n2", "--npes=3"], ["--timeout", "5", "--timeout", "6", "-n", "2"]):
            with self.subTest(args=args):
                done, _ = self.symmrun(*args, "true")
                self.assertEqual(done.returncode, 2, done.stderr)
                self.assertIn("is given more than once", done.stderr)

    def test_missing_program(self):
        done, _ = self.symmrun("-n", 2)
        self.assertEqual(done.returncode, 2)
        self.assertIn("no program given", done.stderr)

    def test_program_not_found(self):
        done, _ = self.symmrun("-n", 2, "symmrun-no-such-program")
        self.assertEqual(done.returncode, 127)
        self.assertIn("'symmrun-no-such-program' not found", done.stderr)
        done, _ = self.symmrun("-n", 2, "./symmrun-no-such-program")
        self.assertEqual(done.returncode, 127)
        self.assertIn("'./symmrun-no-such-program'", done.stderr)
        self.assertIn("No such file or directory", done.stderr)
        self.assertEqual(self.job_directories(), [], "nothing may be set up for a program that cannot run")

    def test_program_not_executable(self):
        script = os.path.join(self.bin, "not-executable")
        with open(script, "w") as f:
            f.write("#!/bin/sh\n")
        os.chmod(script, 0o644)
        for name in (script, "not-executable"):
            with self.subTest(name=name):
                done, _ = self.symmrun("-n", 2, name)
                self.assertEqual(done.returncode, 127)
                self.assertIn(f"'{name}'", done.stderr)
        self.assertIn("Permission denied", self.symmrun("-n", 1, script)[0].stderr)

    def test_bad_options(self):
        cases = [
            (["--bogus"], "unknown option '--bogus'"),
            (["--timeout", "0"], "invalid --timeout '0'"),
            (["--timeout", "-1"], "invalid --timeout '-1'"),
            (["--timeout", "soon"], "invalid --timeout 'soon'"),
            (["--gpus", "0,,1"], "invalid --gpus list '0,,1'"),
            (["--gpus", "a"], "invalid --gpus list 'a'"),
            (["--tag-output=yes"], "takes no value"),
        ]
        for args, message in cases:
            with self.subTest(args=args):
                done, _ = self.symmrun("-n", 1, *args, "true")
                self.assertEqual(done.returncode, 2, done.stderr)
                self.assertIn(message, done.stderr)

    def test_options_after_the_program_belong_to_it(self):
        done, _ = self.symmrun("-n", 1, "sh", "-c", 'printf "%s|" "$@"', "sh", "-n", "--timeout", "--")
        self.assertEqual(done.returncode, 0, done.stderr)
        self.assertEqual(done.stdout, "-n|--timeout|--|")

    def test_help_and_version(self):
        done, _ = self.symmrun("--help")
        self.assertEqual(done.returncode, 0)
        self.assertIn("Usage: symmrun -n N", done.stdout)
        for option in ("--tag-output", "--timeout", "--mps", "--gpus", "--version"):
            self.assertIn(option, done.stdout)
        done, _ = self.symmrun("--version")
        self.assertEqual(done.returncode, 0)
        self.assertRegex(done.stdout, r"^symmrun \(symm\) \d+\.\d+\.\d+\n$")


class FailureTest(SymmrunTestCase):
    def test_a_fatal_error_flushes_what_the_pes_printed(self):
        done, _ = self.probe(2, "--symm", "mismatched_free")
        self.assertNotEqual(done.returncode, 0, done.stderr)
        self.assertIn("symm: fatal: PE", done.stderr)
        self.assertIn("did not ask for the same collective allocation", done.stderr)
        for pe in range(2):
            self.assertIn(f"PE {pe} printed this before the fatal error\n", done.stdout)

    def test_a_finalize_that_finds_an_error_exits_non_zero(self):
        # PE 0's extra barrier meets PE 1's finalize: both see the mismatch, named with both calls. Whichever PE
        # compares first reports it (PE 0 in its barrier, PE 1 in its finalize) and symmrun ends the job: either is
        # correct. No PE, and not symmrun, may exit 0.
        done, _ = self.probe(2, "--symm", "extra_barrier")
        self.assertNotEqual(done.returncode, 0, done.stderr)
        self.assertRegex(done.stderr, r"symm: PE (0: barrier_all|1: finalize):")
        self.assertIn("PE 0: collective operation #1: a barrier", done.stderr)
        self.assertIn("PE 1: collective operation #1: finalize the world", done.stderr)
        self.assertRegex(done.stderr, r"symmrun: PE [01] \(pid \d+\) exited with status [13]")

    def test_exit_status_of_failing_pe(self):
        done, elapsed = self.probe(3, "--exit", "1:3", "--sleep", "30")
        reports = self.reports(3)
        self.assertEqual(done.returncode, 3, done.stderr)
        self.assertIn(f"symmrun: PE 1 (pid {reports[1]['pid']}) exited with status 3\n", done.stderr)
        self.assertLess(elapsed, 2.0, "the other PEs were not taken down promptly")
        self.assert_all_gone(reports)
        self.assertEqual(self.job_directories(), [])

    def test_pe_killed_by_sigkill(self):
        done, elapsed = self.probe(4, "--raise", "2:9", "--sleep", "30", "--child")
        reports = self.reports(4)
        self.assertEqual(done.returncode, 128 + 9, done.stderr)
        self.assertIn(f"symmrun: PE 2 (pid {reports[2]['pid']}) was killed by signal SIGKILL\n", done.stderr)
        self.assertEqual(done.stderr.count("symmrun: PE"), 1, "only the first failure is reported")
        self.assertLess(elapsed, 2.0, "the other PEs were not taken down promptly")
        self.assert_all_gone(reports)  # including the children the PEs started
        self.assertEqual(self.job_directories(), [])

    def test_pe_that_ignores_sigterm_gets_sigkill(self):
        done, elapsed = self.probe(3, "--exit", "0:5", "--sleep", "30", "--ignore-term")
        reports = self.reports(3)
        self.assertEqual(done.returncode, 5, done.stderr)
        self.assertGreaterEqual(elapsed, 0.9, "SIGKILL must come after a grace period")
        self.assertLess(elapsed, 3.0, "no SIGKILL after the grace period")
        self.assert_all_gone(reports)

    def test_exit_status_with_sigchld_ignored_by_the_caller(self):
        # An inherited SIG_IGN for SIGCHLD makes the kernel reap children unseen unless symmrun resets it.
        def ignore_sigchld():
            default_signals()
            signal.signal(signal.SIGCHLD, signal.SIG_IGN)
        done = subprocess.run([SYMMRUN, "-n", "2", "sh", "-c", "exit $((SYMM_PE * 3))"], env=self.env,
                              capture_output=True, text=True, timeout=RUN_LIMIT_S, preexec_fn=ignore_sigchld)
        self.assertEqual(done.returncode, 3, done.stderr)

    def test_success_leaves_no_process_behind(self):
        done, _ = self.probe(2, "--child")
        self.assertEqual(done.returncode, 0, done.stderr)
        self.assertEqual(done.stderr, "")
        self.assert_all_gone(self.reports(2))

    def test_timeout(self):
        done, elapsed = self.probe(3, "--sleep", "30", "--child", options=("--timeout", "0.5"))
        reports = self.reports(3)
        self.assertEqual(done.returncode, 124, done.stderr)
        self.assertIn("timeout", done.stderr)
        self.assertIn("--timeout 0.5 s", done.stderr)
        self.assertNotIn("symmrun: PE", done.stderr, "PEs ended by the timeout are not failures")
        self.assertGreaterEqual(elapsed, 0.5)
        self.assertLess(elapsed, 2.5)
        self.assert_all_gone(reports)
        self.assertEqual(self.job_directories(), [])

    def test_timeout_tells_a_paused_pe_from_a_waiting_one(self):
        done, _ = self.probe(3, "--raise", f"1:{int(signal.SIGSTOP)}", "--sleep", "30", options=("--timeout", "1"))
        reports = self.reports(3)
        self.assertEqual(done.returncode, 124, done.stderr)
        self.assertIn(f"timeout: PE 1 (pid {reports[1]['pid']}) was stopped (SIGSTOP or ^Z), not hung", done.stderr)
        self.assertIn(f"timeout: PE 0 (pid {reports[0]['pid']}) was asleep", done.stderr)
        self.assert_all_gone(reports)
        self.assertEqual(self.job_directories(), [])

    def test_job_shorter_than_timeout(self):
        done, _ = self.probe(2, options=("--timeout", "30"))
        self.assertEqual(done.returncode, 0, done.stderr)


class FaultTest(SymmrunTestCase):
    """A PE of a symm job (the probe's --symm mode: every PE in one host-backend world) ends while the others wait
    for it inside a barrier, an allreduce on the world team or a wait_until. The job must end within 2 s of the
    fault, say which PE ended and how, and leave nothing behind: no process, no job directory or rendezvous socket,
    nothing new in /dev/shm (symm's shared memory is memfd, which has no name there)."""

    NPES = 4
    OPERATIONS = ("barrier", "allreduce", "wait")
    # The requirement itself; the job typically ends some 10 ms after the fault, so this leaves ample room for a
    # loaded CI machine (and sanitizers) while still catching a wait that only ends by a timeout.
    LIMIT_S = 2.0

    @staticmethod
    def shm_entries():
        return set(os.listdir("/dev/shm")) if os.path.isdir("/dev/shm") else set()

    def run_fault(self, operation, fault_pe, how):
        """Runs the job; checks what every fault has in common; returns (CompletedProcess, reports)."""
        for name in os.listdir(self.outdir):  # a fresh start for each subtest
            os.remove(os.path.join(self.outdir, name))
        shm_before = self.shm_entries()
        done, _ = self.probe(self.NPES, "--symm", operation, "--fault", f"{fault_pe}:{how}")
        ended = time.monotonic()
        reports = self.reports(self.NPES)
        with open(os.path.join(self.outdir, "fault.txt")) as f:
            fault_time = float(f.read())
        self.assertNotEqual(done.returncode, 0, done.stderr)
        self.assertLess(ended - fault_time, self.LIMIT_S, f"the job ended {ended - fault_time:.2f} s after the fault")
        self.assert_all_gone(reports)
        job_dir = reports[0]["SYMM_JOB_DIR"]
        self.assertFalse(os.path.exists(os.path.join(job_dir, "boot.sock")), "the rendezvous socket outlived the job")
        self.assertFalse(os.path.exists(job_dir), "the job directory outlived the job")
        self.assertEqual(self.job_directories(), [])
        self.assertEqual(self.shm_entries() - shm_before, set(), "the job left entries in /dev/shm")
        return done, reports

    def test_without_a_fault_every_operation_completes(self):
        for operation in self.OPERATIONS:
            with self.subTest(operation=operation):
                done, _ = self.probe(self.NPES, "--symm", operation)
                self.assertEqual(done.returncode, 0, done.stderr)
                self.assertEqual(done.stderr, "")
                self.assert_all_gone(self.reports(self.NPES))

    def check_signalled(self, how, signal_name, status):
        for operation in self.OPERATIONS:
            for fault_pe in (2, 0):  # PE 0 owns the rendezvous socket and leads the job's process group
                with self.subTest(operation=operation, pe=fault_pe):
                    done, reports = self.run_fault(operation, fault_pe, how)
                    pid = reports[fault_pe]["pid"]
                    self.assertEqual(done.returncode, status, done.stderr)
                    self.assertIn(f"symmrun: PE {fault_pe} (pid {pid}) was killed by signal {signal_name}\n",
                                  done.stderr)
                    self.assertEqual(done.stderr.count("symmrun: PE"), 1, done.stderr)

    def test_pe_killed_by_sigkill(self):
        self.check_signalled("kill", "SIGKILL", 128 + 9)

    def test_pe_that_aborts(self):
        self.check_signalled("abort", "SIGABRT", 128 + 6)

    def test_pe_that_exits_with_an_error(self):
        for operation in self.OPERATIONS:
            with self.subTest(operation=operation):
                done, reports = self.run_fault(operation, 2, "exit")
                self.assertEqual(done.returncode, 5, done.stderr)
                self.assertIn(f"symmrun: PE 2 (pid {reports[2]['pid']}) exited with status 5\n", done.stderr)
                self.assertEqual(done.stderr.count("symmrun: PE"), 1, done.stderr)

    def test_pe_that_calls_global_exit(self):
        # symm::global_exit(7): symmrun names the call, stops the others at once and exits with 7, whichever PE's end
        # it sees first (the caller's, or one whose wait its mark ended).
        for operation in self.OPERATIONS:
            with self.subTest(operation=operation):
                done, _ = self.run_fault(operation, 2, "global_exit")
                self.assertEqual(done.returncode, 7, done.stderr)
                self.assertIn("symmrun: PE 2 called symm::global_exit(7); stopping the other PEs\n", done.stderr)
                self.assertEqual(done.stderr.count("symmrun: PE"), 1, done.stderr)

    def test_global_exit_0_ends_the_job_with_status_0(self):
        for name in os.listdir(self.outdir):
            os.remove(os.path.join(self.outdir, name))
        done, elapsed = self.probe(self.NPES, "--symm", "wait", "--fault", "1:global_exit0")
        reports = self.reports(self.NPES)
        self.assertEqual(done.returncode, 0, done.stderr)
        self.assertIn("symmrun: PE 1 called symm::global_exit(0); stopping the other PEs\n", done.stderr)
        self.assertLess(elapsed, 5.0, "the other PEs, waiting for a flag nobody sets, were not stopped")
        self.assert_all_gone(reports)
        self.assertEqual(self.job_directories(), [])

    def test_pe_that_exits_with_status_0_inside_the_operation(self):
        # symmrun sees no failure in PE 2 itself: the others notice that its process is gone (symm's liveness
        # check), fail with peer_failed naming PE 2, and symmrun's note names PE 2 and how it ended.
        for operation in self.OPERATIONS:
            with self.subTest(operation=operation):
                done, reports = self.run_fault(operation, 2, "exit0")
                pid = reports[2]["pid"]
                self.assertEqual(done.returncode, 3, done.stderr)  # the probe's status for a symm::error
                self.assertIn(f"PE 2 (pid {pid}) no longer exists: it exited or was killed", done.stderr)
                self.assertRegex(done.stderr, r"symmrun: PE [013] \(pid \d+\) exited with status 3\n")
                self.assertIn(f"symmrun: note: PE 2 (pid {pid}) had already exited with status 0", done.stderr)
                what = {"barrier": "barrier", "allreduce": "symm::allreduce", "wait": "symm::wait_until"}[operation]
                self.assertIn(f"waited in {what}", done.stderr)


class SignalTest(SymmrunTestCase):
    def test_sigkill_to_symmrun_kills_every_pe(self):
        job = self.start_symmrun("-n", 3, PROBE, self.outdir, "--sleep", "30")
        try:
            reports = self.wait_for_reports(3)
            job.kill()
            job.wait(RUN_LIMIT_S)
            self.assert_all_gone(reports, limit_s=2.0)
        finally:
            job.kill()
            job.communicate()

    def forward(self, sig):
        job = self.start_symmrun("-n", 3, PROBE, self.outdir, "--sleep", "30")
        try:
            reports = self.wait_for_reports(3)
            start = time.monotonic()
            job.send_signal(sig)
            _, stderr = job.communicate(timeout=RUN_LIMIT_S)
            self.assertLess(time.monotonic() - start, 2.0)
        finally:
            job.kill()
        self.assertEqual(job.returncode, -sig, "symmrun ends by the signal it received")
        self.assertIn(f"received {signal.Signals(sig).name}; forwarding it to the PEs", stderr)
        self.assert_all_gone(reports)
        self.assertEqual(self.job_directories(), [], "the job directory outlived the job")

    def test_sigterm_is_forwarded(self):
        self.forward(signal.SIGTERM)

    def test_sigint_is_forwarded(self):
        self.forward(signal.SIGINT)

    def start_with_ignored(self, sig, *probe_args):
        """symmrun started with `sig` ignored, as a shell's `&` ignores SIGINT and nohup SIGHUP."""
        def ignore():
            default_signals()
            signal.signal(sig, signal.SIG_IGN)
        return subprocess.Popen([SYMMRUN, "-n", "3", PROBE, self.outdir, *probe_args], env=self.env,
                                stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                                preexec_fn=ignore)

    def test_sigint_to_a_background_symmrun_ends_the_pes(self):
        # The PEs inherit the ignored SIGINT; symmrun gives them the default action, so the forwarded one ends them.
        job = self.start_with_ignored(signal.SIGINT, "--sleep", "30")
        try:
            reports = self.wait_for_reports(3)
            start = time.monotonic()
            job.send_signal(signal.SIGINT)
            _, stderr = job.communicate(timeout=RUN_LIMIT_S)
            self.assertLess(time.monotonic() - start, 2.0, "the PEs ignored the forwarded SIGINT")
        finally:
            job.kill()
        self.assertEqual(job.returncode, -signal.SIGINT, stderr)
        self.assertIn("received SIGINT; forwarding it to the PEs", stderr)
        self.assert_all_gone(reports)
        self.assertEqual(self.job_directories(), [])

    def test_sighup_under_nohup_stays_ignored(self):
        job = self.start_with_ignored(signal.SIGHUP, "--sleep", "1.5")
        try:
            self.wait_for_reports(3)
            start = time.monotonic()
            job.send_signal(signal.SIGHUP)
            _, stderr = job.communicate(timeout=RUN_LIMIT_S)
        finally:
            job.kill()
        self.assertEqual(job.returncode, 0, stderr)
        self.assertNotIn("SIGHUP", stderr)
        self.assertGreater(time.monotonic() - start, 0.5, "the job ended at the hangup")


class OutputTest(SymmrunTestCase):
    LINES = 40

    def check_stream(self, text, npes, tail=None):
        by_pe = {pe: [] for pe in range(npes)}
        for line in text.split("\n")[:-1]:
            match = re.fullmatch(r"\[pe (\d+)\] (.*)", line)
            self.assertIsNotNone(match, f"line without a prefix: {line!r}")
            by_pe[int(match.group(1))].append(match.group(2))
        self.assertTrue(text.endswith("\n"))
        for pe, lines in by_pe.items():
            expected = [f"pe {pe} line {i} aaaa bbbb" for i in range(self.LINES)]
            self.assertEqual(lines, expected + ([tail] if tail else []), f"lines of PE {pe}")

    def test_tag_output(self):
        done, _ = self.probe(3, "--lines", self.LINES, "--partial", "no newline", options=("--tag-output",))
        self.assertEqual(done.returncode, 0, done.stderr)
        self.check_stream(done.stdout, 3, tail="no newline")
        self.check_stream(done.stderr, 3)

    def test_output_untouched_without_tag_output(self):
        done, _ = self.symmrun("-n", 2, "sh", "-c", 'printf "a%s" "$SYMM_PE"')
        self.assertEqual(done.returncode, 0, done.stderr)
        self.assertEqual(sorted(done.stdout[i:i + 2] for i in (0, 2)), ["a0", "a1"])

    def test_tag_output_with_failure(self):
        done, _ = self.symmrun("-n", 2, "--tag-output", "sh", "-c", 'echo "out $SYMM_PE"; exit $SYMM_PE')
        self.assertEqual(done.returncode, 1)
        self.assertIn("[pe 1] out 1\n", done.stdout)
        self.assertIn("symmrun: PE 1 (pid", done.stderr)


class MpsTest(SymmrunTestCase):
    WARNING = "time-slice without MPS"

    def fake_mps_control(self):
        """A stand-in for nvidia-cuda-mps-control that logs its calls. Like the real one, -d leaves a daemon
        (here a sleep) behind, with its pid file and control socket in the pipe directory; "quit" ends the
        daemon a little later and leaves the socket file in place."""
        self.mps_log = os.path.join(self.tmp, "mps.log")
        self.env["FAKE_MPS_LOG"] = self.mps_log
        self.install_script("nvidia-cuda-mps-control", f"""\
            pipe="$CUDA_MPS_PIPE_DIRECTORY"
            if [ "$1" = -d ]; then
              echo "start $pipe $CUDA_MPS_LOG_DIRECTORY" >> "$FAKE_MPS_LOG"
              sleep 30 &
              echo $! > "$pipe/nvidia-cuda-mps-control.pid"
              echo "daemon $!" >> "$FAKE_MPS_LOG"
              exec {sys.executable} -c 'import socket, sys; socket.socket(socket.AF_UNIX).bind(sys.argv[1])' \\
                "$pipe/control"
            fi
            read command
            echo "$command $pipe" >> "$FAKE_MPS_LOG"
            (sleep 0.2; kill $(cat "$pipe/nvidia-cuda-mps-control.pid")) >/dev/null 2>&1 &
            """)

    def mps_calls(self):
        """The fake's log, with the daemon's pid recorded for tearDown (it must be gone by then)."""
        with open(self.mps_log) as f:
            calls = f.read().splitlines()
        self.pids += [int(call.split()[1]) for call in calls if call.startswith("daemon ")]
        return [call for call in calls if not call.startswith("daemon ")]

    def test_warning_when_pes_share_a_gpu(self):
        self.fake_nvidia_smi(gpus=1)
        done, _ = self.probe(2)
        self.assertEqual(done.returncode, 0, done.stderr)
        warnings = [line for line in done.stderr.splitlines() if self.WARNING in line]
        self.assertEqual(len(warnings), 1, done.stderr)
        self.assertIn("2 PEs share 1 GPU", warnings[0])
        self.assertIn("4.5 ms", warnings[0])
        self.assertIn("pass --mps", warnings[0])

    def test_no_warning(self):
        control_dir = os.path.join(self.tmp, "mps-pipe")
        os.mkdir(control_dir)
        cases = {
            "one PE": (1, 1, {}),
            "enough GPUs": (2, 2, {}),
            "no nvidia-smi": (4, None, {}),
            "nvidia-smi fails": (4, 1, {"status": 9}),
            "MPS running": (4, 1, {"CUDA_MPS_PIPE_DIRECTORY": control_dir}),
        }
        import socket
        with socket.socket(socket.AF_UNIX) as control:
            control.bind(os.path.join(control_dir, "control"))
            for name, (npes, gpus, extra) in cases.items():
                with self.subTest(name):
                    if os.path.exists(os.path.join(self.bin, "nvidia-smi")):
                        os.remove(os.path.join(self.bin, "nvidia-smi"))
                    if gpus is not None:
                        self.fake_nvidia_smi(gpus, status=extra.get("status", 0))
                    env = dict(self.env)
                    if "CUDA_MPS_PIPE_DIRECTORY" in extra:
                        env["CUDA_MPS_PIPE_DIRECTORY"] = extra["CUDA_MPS_PIPE_DIRECTORY"]
                    done, _ = self.symmrun("-n", npes, "true", env=env)
                    self.assertEqual(done.returncode, 0, done.stderr)
                    self.assertNotIn(self.WARNING, done.stderr)

    def test_private_mps_daemon(self):
        self.fake_nvidia_smi(gpus=1)
        self.fake_mps_control()
        done, _ = self.probe(2, options=("--mps",))
        self.assertEqual(done.returncode, 0, done.stderr)
        self.assertEqual(done.stderr, "", "no time-slicing warning, no trouble stopping the daemon")
        reports = self.reports(2)
        job_dir = reports[0]["SYMM_JOB_DIR"]
        pipe_dir, log_dir = reports[0]["CUDA_MPS_PIPE_DIRECTORY"], reports[0]["CUDA_MPS_LOG_DIRECTORY"]
        self.assertEqual(os.path.dirname(pipe_dir), job_dir)
        self.assertEqual(os.path.dirname(log_dir), job_dir)
        self.assertEqual(reports[1]["CUDA_MPS_PIPE_DIRECTORY"], pipe_dir)
        self.assertEqual(self.mps_calls(), [f"start {pipe_dir} {log_dir}", f"quit {pipe_dir}"])
        self.assertEqual(self.job_directories(), [])

    def test_mps_daemon_is_stopped_when_a_pe_fails(self):
        self.fake_mps_control()
        done, _ = self.probe(2, "--exit", "1:4", "--sleep", "30", options=("--mps",))
        self.assertEqual(done.returncode, 4, done.stderr)
        self.reports(2)
        self.assertEqual([call.split()[0] for call in self.mps_calls()], ["start", "quit"])
        self.assertEqual(self.job_directories(), [])

    def test_mps_without_control_program(self):
        done, _ = self.probe(2, options=("--mps",))
        self.assertEqual(done.returncode, 1)
        self.assertIn("nvidia-cuda-mps-control not found", done.stderr)
        self.assertFalse(os.path.exists(os.path.join(self.outdir, "pe-0.txt")), "no PE may start")
        self.assertEqual(self.job_directories(), [])

    def test_mps_daemon_that_fails_to_start(self):
        self.install_script("nvidia-cuda-mps-control", 'echo "An instance of this daemon is already running"; exit 1\n')
        done, _ = self.probe(2, options=("--mps",))
        self.assertEqual(done.returncode, 1)
        self.assertIn("exited with status 1", done.stderr)
        self.assertIn("An instance of this daemon is already running", done.stderr)
        self.assertEqual(self.job_directories(), [])


# Every variable a launcher sets that symm reads, so that a job started by hand below sees only its own.
LAUNCHER_VARIABLES = ("SYMM_PE", "SYMM_N_PES", "SYMM_LOCAL_PE", "SYMM_LOCAL_N_PES", "SYMM_JOB_DIR", "SYMM_JOB_TOKEN",
                      "SYMM_JOB_ID", "SYMM_BOOTSTRAP_ADDR", "OMPI_COMM_WORLD_RANK", "OMPI_COMM_WORLD_SIZE",
                      "OMPI_COMM_WORLD_LOCAL_RANK", "OMPI_COMM_WORLD_LOCAL_SIZE", "OMPI_MCA_ess_base_jobid",
                      "OMPI_MCA_orte_hnp_uri", "PMIX_NAMESPACE", "PMI_RANK", "PMI_SIZE", "PMI_KVSNAME", "PMI_PORT",
                      "MPI_LOCALRANKID", "MPI_LOCALNRANKS", "SLURM_PROCID", "SLURM_NTASKS", "SLURM_LOCALID",
                      "SLURM_JOB_ID", "SLURM_STEP_ID", "SLURM_STEPID", "SLURM_CLUSTER_NAME", "RANK", "WORLD_SIZE",
                      "LOCAL_RANK", "LOCAL_WORLD_SIZE", "MASTER_ADDR", "MASTER_PORT", "TORCHELASTIC_RUN_ID",
                      "TORCHELASTIC_RESTART_COUNT", "GROUP_RANK")


class LauncherJobTestCase(SymmrunTestCase):
    """Jobs started without symmrun, by other launchers' variables. They meet in /tmp/symm-<uid>/job-<digest>, which
    PE 0 removes after the rendezvous: none may be left. The classes that start such jobs run in one Meson test, one
    after the other, so that the check sees only their own."""

    def setUp(self):
        super().setUp()
        self.meeting_root = f"/tmp/symm-{os.getuid()}"
        self.dirs_before = set(self.meeting_places())
        self.unique = f"{os.getpid()}-{time.monotonic_ns()}"

    def tearDown(self):
        try:
            self.assertEqual(sorted(set(self.meeting_places()) - self.dirs_before), [],
                             "a job's meeting place was left behind")
        finally:
            super().tearDown()

    def meeting_places(self):
        try:
            return [d for d in os.listdir(self.meeting_root) if d.startswith("job-")]
        except FileNotFoundError:
            return []

    def start_pe(self, variables, mark):
        env = {k: v for k, v in self.env.items() if k not in LAUNCHER_VARIABLES}
        env.update(variables)
        env["PROBE_JOB_MARK"] = str(mark)
        env.setdefault("SYMM_BOOTSTRAP_TIMEOUT_MS", "8000")
        return subprocess.Popen([PROBE, self.outdir, "--symm", "job_mark"], env=env, stdin=subprocess.DEVNULL,
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, preexec_fn=default_signals)

    def finish(self, processes):
        """[(status, stderr)] of `processes`, reaping each as soon as it ends, as a launcher does (an unreaped PE
        is a zombie, which its peers cannot tell from a live process)."""
        assert wait_until(lambda: None not in [p.poll() for p in processes], RUN_LIMIT_S), "a PE did not end"
        return [(p.returncode, p.communicate()[1]) for p in processes]

    # Launchers' variables for PE `rank` of a job of `size`; `ids` are the variables that identify the job.
    @staticmethod
    def open_mpi(rank, size, ids):
        return {"OMPI_COMM_WORLD_RANK": str(rank), "OMPI_COMM_WORLD_SIZE": str(size), **ids}

    @staticmethod
    def pmi(rank, size, ids):
        return {"PMI_RANK": str(rank), "PMI_SIZE": str(size), **ids}

    @staticmethod
    def slurm(rank, size, ids):
        return {"SLURM_PROCID": str(rank), "SLURM_NTASKS": str(size), **ids}

    @staticmethod
    def torchrun(rank, size, ids, nodes=1):
        """What torchrun gives each worker (torch.distributed.run): `nodes` nodes of size / nodes PEs each."""
        local = size // nodes
        return {"RANK": str(rank), "WORLD_SIZE": str(size), "LOCAL_RANK": str(rank % local),
                "LOCAL_WORLD_SIZE": str(local), "GROUP_RANK": str(rank // local), "TORCHELASTIC_RESTART_COUNT": "0",
                **ids}



class JobIdentityTest(LauncherJobTestCase):
    """No two jobs may ever form one world. Each PE runs the probe's job_mark operation: it writes its job's mark into
    its slot on every PE and checks that every slot holds its own job's mark ("mixed worlds" otherwise). A torchrun
    job of one node meets through a Unix socket like the others; one that spans nodes meets over TCP at
    MASTER_PORT + 1, which needs a token (TorchrunTest)."""

    def run_two_jobs(self, launcher, ids_a, ids_b, size=2):
        """Starts the PEs of jobs a and b at once, interleaved; returns [(status, stderr)] for a's PEs, then b's."""
        processes = []
        for rank in range(size):
            processes.append(self.start_pe(launcher(rank, size, ids_a), 1000))
            processes.append(self.start_pe(launcher(rank, size, ids_b), 2000))
        results = self.finish(processes)
        return results[0::2] + results[1::2]

    def test_concurrent_jobs_with_distinct_identities_never_mix(self):
        u = self.unique
        cases = {
            # Open MPI 4 and 5 alike: an ORTE job id both jobs share (the old meeting key), PMIx namespaces that differ
            "Open MPI, same job id, other namespace": (
                self.open_mpi, {"OMPI_MCA_ess_base_jobid": "7", "PMIX_NAMESPACE": f"prterun-a-{u}@1"},
                {"OMPI_MCA_ess_base_jobid": "7", "PMIX_NAMESPACE": f"prterun-b-{u}@1"}),
            "Open MPI 4, job ids": (self.open_mpi, {"OMPI_MCA_ess_base_jobid": f"1{u}"},
                                    {"OMPI_MCA_ess_base_jobid": f"2{u}"}),
            "PMI, kvs names": (self.pmi, {"PMI_KVSNAME": f"kvs_a_{u}"}, {"PMI_KVSNAME": f"kvs_b_{u}"}),
            "Slurm, two steps of one job": (self.slurm, {"SLURM_JOB_ID": u, "SLURM_STEP_ID": "0"},
                                            {"SLURM_JOB_ID": u, "SLURM_STEP_ID": "1"}),
            "Slurm, same step of two clusters": (
                self.slurm, {"SLURM_JOB_ID": u, "SLURM_STEP_ID": "0", "SLURM_CLUSTER_NAME": "a"},
                {"SLURM_JOB_ID": u, "SLURM_STEP_ID": "0", "SLURM_CLUSTER_NAME": "b"}),
            # torchrun --standalone: every job's store holds its own port; --rdzv-id gives a run id, else "none"
            "torchrun, one node, two master ports": (
                self.torchrun, {"MASTER_ADDR": "127.0.0.1", "MASTER_PORT": "29500", "TORCHELASTIC_RUN_ID": u},
                {"MASTER_ADDR": "127.0.0.1", "MASTER_PORT": "29502", "TORCHELASTIC_RUN_ID": u}),
            "torchrun, one node, two run ids": (
                self.torchrun, {"MASTER_ADDR": "localhost", "MASTER_PORT": "29500", "TORCHELASTIC_RUN_ID": f"a-{u}"},
                {"MASTER_ADDR": "localhost", "MASTER_PORT": "29500", "TORCHELASTIC_RUN_ID": f"b-{u}"}),
            "SYMM_JOB_ID over identical launcher variables": (
                self.slurm, {"SLURM_JOB_ID": u, "SLURM_STEP_ID": "0", "SYMM_JOB_ID": f"a-{u}"},
                {"SLURM_JOB_ID": u, "SLURM_STEP_ID": "0", "SYMM_JOB_ID": f"b-{u}"}),
        }
        for name, (launcher, ids_a, ids_b) in cases.items():
            for size in (2, 3):
                with self.subTest(case=name, size=size):
                    for status, err in self.run_two_jobs(launcher, ids_a, ids_b, size):
                        self.assertNotIn("mixed worlds", err)
                        self.assertEqual(status, 0, err)

    def test_a_launcher_without_a_job_identity_is_refused(self):
        cases = {
            "Open MPI": (self.open_mpi, {}, "PMIX_NAMESPACE or OMPI_MCA_ess_base_jobid not set"),
            "PMI": (self.pmi, {}, "PMI_KVSNAME or PMIX_NAMESPACE not set"),
            "Slurm": (self.slurm, {"SLURM_JOB_ID": "5"}, "SLURM_JOB_ID and SLURM_STEP_ID not set"),
        }
        for name, (launcher, ids, message) in cases.items():
            with self.subTest(launcher=name):
                for status, err in self.finish([self.start_pe(launcher(r, 2, ids), 1) for r in range(2)]):
                    self.assertEqual(status, 3, err)
                    self.assertIn("give this job no identity of its own", err)
                    self.assertIn(message, err)
                    self.assertIn("SYMM_JOB_ID", err)

    def test_a_second_pe_0_with_the_same_identity_stops_and_leaves_the_first_job_alone(self):
        ids = {"SLURM_JOB_ID": self.unique, "SLURM_STEP_ID": "0"}
        first_pe0 = self.start_pe(self.slurm(0, 2, ids), 1000)
        # Wait until the first job's PE 0 listens, then start the other job's PE 0 with the very same variables.
        self.assertTrue(wait_until(lambda: any(os.path.exists(os.path.join(self.meeting_root, d, "boot.sock"))
                                               for d in set(self.meeting_places()) - self.dirs_before), 5))
        [(status, err)] = self.finish([self.start_pe(self.slurm(0, 2, ids), 2000)])
        self.assertEqual(status, 3, err)
        self.assertIn("another job's PE 0 is already waiting for its PEs", err)
        self.assertIn(f"SLURM_JOB_ID={self.unique}", err)
        # The first job is not disturbed: its PE 1 comes, and the job completes.
        for status, err in self.finish([first_pe0, self.start_pe(self.slurm(1, 2, ids), 1000)]):
            self.assertEqual(status, 0, err)

    def test_two_processes_claiming_one_pe_fail_the_rendezvous(self):
        ids = {"PMI_KVSNAME": f"kvs_{self.unique}"}
        first = [self.start_pe(self.pmi(0, 3, ids), 1000), self.start_pe(self.pmi(1, 3, ids), 1000)]
        time.sleep(0.5)  # PE 1 of the first job has joined; PE 2 has not come
        second = self.start_pe(self.pmi(1, 3, ids), 2000)  # another job's PE 1, the same variables
        results = self.finish(first + [second])
        for status, err in results:
            self.assertEqual(status, 3, err)
            self.assertNotIn("mixed worlds", err)
        self.assertIn("two processes claim PE 1", results[0][1])
        self.assertIn("two jobs were started with the same identity", results[0][1])
        for status, err in results[1:]:
            self.assertIn("refused", err)


class TorchrunTest(LauncherJobTestCase):
    """torchrun's workers: a job of one node (LOCAL_WORLD_SIZE == WORLD_SIZE, as `torchrun --standalone` or
    `--nnodes 1` starts it) needs no token and no TCP; a job across nodes meets over TCP and needs one."""

    def ids(self, port):
        return {"MASTER_ADDR": "127.0.0.1", "MASTER_PORT": str(port), "TORCHELASTIC_RUN_ID": f"run-{self.unique}"}

    def test_a_job_of_one_node_needs_no_token(self):
        for size in (2, 4):
            with self.subTest(size=size):
                ids = dict(self.ids(29400 + size), SYMM_JOB_TOKEN="")
                for status, err in self.finish([self.start_pe(self.torchrun(r, size, ids), 7) for r in range(size)]):
                    self.assertEqual(status, 0, err)
                    self.assertNotIn("token", err)

    def test_a_job_across_nodes_meets_over_tcp_and_needs_a_token(self):
        ids = dict(self.ids(29410), SYMM_JOB_TOKEN="")
        for status, err in self.finish([self.start_pe(self.torchrun(r, 4, ids, nodes=2), 7) for r in range(2)]):
            self.assertEqual(status, 3, err)
            self.assertIn("a TCP rendezvous (at 127.0.0.1:29411) needs a job token", err)


class RealLauncherTest(LauncherJobTestCase):
    """The launchers themselves, where they are installed (each test says so and skips otherwise): torchrun (PyTorch;
    not in CI, its wheels are gigabytes), MPICH's mpiexec (Hydra; tools/setup.sh installs PyPI's mpich into its
    cache) and Open MPI's mpirun (Debian's openmpi-bin). Every PE of a job of 2 and of 4 joins one world and checks
    that it holds no other job's PE."""

    def run_job(self, command, size, extra_env=None):
        outdir = os.path.join(self.outdir, f"{os.path.basename(command[0])}-{size}")
        os.mkdir(outdir)
        env = {k: v for k, v in self.env.items() if k not in LAUNCHER_VARIABLES}
        env.update(PROBE_JOB_MARK="7", SYMM_BOOTSTRAP_TIMEOUT_MS="20000", **(extra_env or {}))
        done = subprocess.run([*command, PROBE, outdir, "--symm", "job_mark"], env=env, stdin=subprocess.DEVNULL,
                              capture_output=True, text=True, timeout=120, preexec_fn=default_signals)
        self.assertEqual(done.returncode, 0, done.stderr)
        self.assertNotIn("mixed worlds", done.stderr)
        # One report per PE (the probe names it by pid when SYMM_PE is not set).
        self.assertEqual(len([f for f in os.listdir(outdir) if f.endswith(".txt")]), size)

    @staticmethod
    def setup_cache():
        """Where tools/setup.sh installs test tools: ${SYMM_DEPS_DIR:-${XDG_CACHE_HOME:-~/.cache}/symm}."""
        cache = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
        return os.environ.get("SYMM_DEPS_DIR") or os.path.join(cache, "symm")

    def launcher(self, name, version_text, cached=None):
        """The launcher `name` whose --version output holds `version_text`: on PATH, else at `cached` (a path under
        tools/setup.sh's cache); or skip."""
        path = shutil.which(name)
        if cached is not None and (path is None or not self.is_launcher(path, version_text)):
            path = os.path.join(self.setup_cache(), cached)
            if not os.access(path, os.X_OK):
                self.skipTest(f"no {name} of {version_text} on PATH nor at {path} (tools/setup.sh installs it)")
        if path is None:
            self.skipTest(f"{name} is not installed")
        if not self.is_launcher(path, version_text):
            self.skipTest(f"{path} is not {version_text}")
        return path

    @staticmethod
    def is_launcher(path, version_text):
        version = subprocess.run([path, "--version"], capture_output=True, text=True, timeout=60)
        return version_text in version.stdout + version.stderr

    def test_torchrun_standalone(self):
        torchrun = shutil.which("torchrun")
        if torchrun is None:
            self.skipTest("torchrun is not installed (pip install torch)")
        for size in (2, 4):
            with self.subTest(size=size):
                self.run_job([torchrun, "--standalone", "--nproc-per-node", str(size), "--no-python"], size)

    def test_mpich_mpiexec(self):
        mpiexec = self.launcher("mpiexec", "HYDRA", cached="mpich-5.0.2/bin/mpiexec")
        for size in (2, 4):
            with self.subTest(size=size):
                self.run_job([mpiexec, "-n", str(size)], size)

    def test_open_mpi_mpirun(self):
        mpirun = self.launcher("mpirun", "Open MPI")
        for size in (2, 4):
            with self.subTest(size=size):
                self.run_job([mpirun, "-n", str(size), "--oversubscribe"], size, {"OMPI_ALLOW_RUN_AS_ROOT": "1",
                                                                                   "OMPI_ALLOW_RUN_AS_ROOT_CONFIRM": "1"})


class LeftoversTest(LauncherJobTestCase):
    """Failing jobs of every kind, with symmrun and without it: nothing of a job may remain (its directory under
    XDG_RUNTIME_DIR or /tmp/symm-<uid>, a socket, a shared-memory object in /dev/shm)."""

    def setUp(self):
        super().setUp()
        self.shm_before = set(os.listdir("/dev/shm")) if os.path.isdir("/dev/shm") else set()

    def tearDown(self):
        try:
            shm_after = set(os.listdir("/dev/shm")) if os.path.isdir("/dev/shm") else set()
            self.assertEqual(sorted(n for n in shm_after - self.shm_before if "symm" in n), [])
        finally:
            super().tearDown()

    def test_failing_jobs_under_symmrun_leave_nothing(self):
        for fault in ("exit", "abort", "kill", "exit0"):
            with self.subTest(fault=fault):
                done, _ = self.probe(3, "--symm", "barrier", "--fault", f"1:{fault}")
                self.assertNotEqual(done.returncode, 0, done.stderr)
                self.assertEqual(self.job_directories(), [])
        with self.subTest(fault="throw"):
            done, _ = self.probe(2, "--symm", "mismatched_free")
            self.assertNotEqual(done.returncode, 0, done.stderr)
            self.assertEqual(self.job_directories(), [])
        with self.subTest(fault="timeout"):
            done, _ = self.probe(3, "--sleep", "30", options=("--timeout", "0.5"))
            self.assertEqual(done.returncode, 124, done.stderr)
            self.assertEqual(self.job_directories(), [])

    def test_failing_jobs_without_symmrun_leave_nothing(self):
        # A PE that never comes (PE 0 times out at the rendezvous), a PE that dies in a barrier, a job that breaks in
        # a destructor: the meeting place in /tmp/symm-<uid> is checked in tearDown.
        ids = {"SLURM_JOB_ID": self.unique, "SLURM_STEP_ID": "0", "SYMM_BOOTSTRAP_TIMEOUT_MS": "500"}
        [(status, err)] = self.finish([self.start_pe(self.slurm(0, 2, ids), 1)])
        self.assertEqual(status, 3, err)
        self.assertIn("these never came: PE 1", err)
        for step, args in (("1", ("--symm", "barrier", "--fault", "1:kill")), ("2", ("--symm", "mismatched_free"))):
            env_ids = dict(ids, SLURM_STEP_ID=step)
            processes = []
            for rank in range(2):
                env = {k: v for k, v in self.env.items() if k not in LAUNCHER_VARIABLES}
                env.update(self.slurm(rank, 2, env_ids))
                processes.append(subprocess.Popen([PROBE, self.outdir, *args], env=env, stdin=subprocess.DEVNULL,
                                                  stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                                                  preexec_fn=default_signals))
            for status, err in self.finish(processes):
                self.assertNotEqual(status, 0, err)


if __name__ == "__main__":
    if len(sys.argv) < 3:
        sys.exit(__doc__)
    SYMMRUN, PROBE = os.path.abspath(sys.argv[1]), os.path.abspath(sys.argv[2])
    unittest.main(argv=[sys.argv[0], *sys.argv[3:]], verbosity=2)
