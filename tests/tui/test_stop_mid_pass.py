"""A stop ends a live run mid-pass, and no process outlives its terminal or its app.

q, SIGINT, SIGTERM and SIGHUP end a run within a second even in the middle of a slow pass (the engine's
abort ends the llama_decode in progress: spectui.engine.llama.abort), with the exit status of the table, and the
trace holds every pass up to the last complete one and the end (the aborted pass is never recorded). The
process is gone within 2 s of a killed terminal during the run, during the idle-time probe and during the
app's shutdown (Textual's SIGCONT handler once restarted its input thread on a dead terminal after the app
ended, and the process spun for minutes: tui.shared.app restores the job-control handlers, and an ExitGuard
ends the process 2 s after the app whatever holds it).

The slow pass is real llama.cpp: a generated model of 512 tiny blocks (LLAMA_MAX_LAYERS) decoded by 64
threads pinned to one core, so that every one of its ~10,000 graph nodes waits for 64 threads to meet on
that core (a verify takes seconds; measured here from the trace's own timings, never assumed). Real ptys
(tests/pty_term.py) and tmux.
"""

from __future__ import annotations

import os
import shlex
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import psutil
import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from pty_term import PtyProcess  # noqa: E402
from tmux_pane import needs_tmux  # noqa: E402
from waits import Started, catches, wait_until  # noqa: E402

from spectui.contract.events import PassEvent, RunEnded  # noqa: E402
from spectui.contract.exitcodes import SIGHUP_STATUS, SIGINT_STATUS, SIGTERM_STATUS  # noqa: E402
from spectui.recording.trace import read_trace  # noqa: E402

pytestmark = [pytest.mark.slow, pytest.mark.timing]  # 64 threads on one core: alone under xdist

STOP_S = 1.0  # q and signals end a live run (the process) within this, mid-pass included
GONE_S = 2.0  # a process whose terminal was killed, or whose app ended, is gone within this
SLOW_PASS_MS = 1500.0  # the passes must be at least this slow for "mid-pass" to mean anything
THREADS = "64"
# OpenMP's passive policy, always: spectui takes it by itself when other processes keep the cores busy at launch
# (spectui.engine.llama.omp), and a pass then costs a third of what it costs spinning; fixed here, the slow pass is
# as slow on a busy machine as on a quiet one (64 sleeping threads meeting on one core at every graph node)
POLICY = ["env", "OMP_WAIT_POLICY=PASSIVE"]
PROMPT = "the cat the cat the cat the cat"
STATUS = {signal.SIGINT: SIGINT_STATUS, signal.SIGTERM: SIGTERM_STATUS, signal.SIGHUP: SIGHUP_STATUS}
SIGNALS = [signal.SIGINT, signal.SIGTERM, signal.SIGHUP]
SIG_IDS = ["INT-130", "TERM-143", "HUP-129"]


@pytest.fixture(scope="module")
def slow_target(tiny_model) -> Path:
    return tiny_model("slow-512.gguf", n_layer=512, name="tiny-slow")


def pinned() -> list[str]:
    """``taskset -c CPU``: the process (and its 64 decode threads) on one core, where they fight."""
    if shutil.which("taskset") is None:
        return []
    return ["taskset", "-c", str(max(os.sched_getaffinity(0)))]


def run_argv(target: Path, *extra) -> list[str]:
    return [*POLICY, *pinned(), sys.executable, "-m", "spectui", "--target", str(target), "--drafter", "ngram",
            "-k", "2", "-p", PROMPT, "-t", THREADS, *map(str, extra)]


def passes_in(trace: Path) -> int:
    """Pass events written to a trace so far (one JSON line each, flushed as it comes)."""
    try:
        return trace.read_bytes().count(b'"type":"pass"') + trace.read_bytes().count(b'"type": "pass"')
    except OSError:
        return 0


def mid_pass(trace: Path, n: int = 2, timeout: float = 180.0) -> None:
    """Return once the trace holds ``n`` passes (0 = the prefill): the loop has begun the next one, which
    lasts seconds (checked afterwards from the recorded timings)."""
    wait_until(lambda: passes_in(trace) >= n, timeout, f"{n} passes recorded")
    time.sleep(0.2)  # into the next pass's verify


def check_trace(trace: Path, took: float | None = None) -> list[PassEvent]:
    """The trace is whole: every pass up to the last complete one, then the end, stopped; the passes were
    slow enough that the stop came mid-pass; the aborted pass is not there. ``took`` (seconds from the
    stop, sent 0.2 s into a pass, to the exit): shorter than what was left of that pass, so it was cut."""
    t = read_trace(str(trace))
    assert t.warnings == []
    passes = [e for e in t.events if isinstance(e, PassEvent)]
    assert isinstance(t.events[-1], RunEnded), t.events[-1]
    end = t.events[-1]
    assert end.reason == "stopped" and not end.error
    assert [p.index for p in passes] == list(range(len(passes)))
    assert end.n_passes == len(passes) - 1  # the decode passes recorded, no more (the aborted one is not)
    slow = [p.timing.wall_ms for p in passes if not p.prefill]
    assert slow and min(slow) >= SLOW_PASS_MS, slow
    if took is not None:
        assert took < min(slow) / 1000.0 - 0.2, (took, slow)
    return passes


def gone_within(pid: int, seconds: float, t0: float) -> float:
    """Seconds from ``t0`` until process ``pid`` is gone (a zombie counts as gone: it runs nothing); fails
    after ``seconds`` (and kills it, so the test leaves nothing)."""
    def gone() -> bool:
        try:
            return psutil.Process(pid).status() == psutil.STATUS_ZOMBIE
        except psutil.NoSuchProcess:
            return True

    deadline = t0 + seconds
    while time.monotonic() < deadline:
        if gone():
            return time.monotonic() - t0
        time.sleep(0.02)
    alive = not gone()
    if alive:
        os.kill(pid, signal.SIGKILL)
    raise AssertionError(f"process {pid} still running {seconds} s after the stop")


# ---------------------------------------------------------------- the TUI


@pytest.mark.parametrize("stop", ["q", *SIGNALS], ids=["q-0", *SIG_IDS])
def test_q_and_signals_mid_pass_end_the_tui_within_a_second(slow_target, tmp_path, stop):
    rec = tmp_path / "run.jsonl"
    p = PtyProcess([], argv=run_argv(slow_target, "-n", "400", "--no-probe", "--record", rec), cols=120, rows=36)
    try:
        mid_pass(rec)
        t0 = time.monotonic()
        p.send("q") if stop == "q" else p.proc.send_signal(stop)
        assert p.wait(30) == (0 if stop == "q" else STATUS[stop])
        took = time.monotonic() - t0
    finally:
        p.close()
    check_trace(rec, took)
    assert took < STOP_S, f"{stop} took {took:.2f} s"


# ---------------------------------------------------------------- headless


@pytest.mark.parametrize("sig", SIGNALS, ids=SIG_IDS)
def test_signals_mid_pass_end_a_headless_run_within_a_second(slow_target, tmp_path, sig):
    rec = tmp_path / "run.jsonl"
    proc = Started(run_argv(slow_target, "--headless", "-n", "400", "--no-probe", "--record", rec),
                   cwd=Path(__file__).resolve().parents[2])
    try:
        wait_until(lambda: catches(proc.pid, signal.SIGTERM, signal.SIGHUP), 120, "the run's signal handlers")
        mid_pass(rec)
        t0 = time.monotonic()
        out, err = proc.stop_with(sig)
        took = time.monotonic() - t0
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == STATUS[sig], err
    assert "n_predict =" in out and "stopped" in out  # the summary of the run so far
    check_trace(rec, took)
    assert took < STOP_S, f"{sig.name} took {took:.2f} s"


# ---------------------------------------------------------------- no process outlives its terminal or app


def test_q_then_the_terminal_hung_up_during_shutdown(slow_target, tmp_path):
    """The issue's orphan: q mid-pass, then, once the app has left the screen (the process finishing its
    stop), the terminal is killed and a SIGCONT comes (as the kernel sends it with a hang-up, and tmux):
    the process is gone within 2 s (Textual's SIGCONT handler used to restart its input thread, which spun
    on the dead terminal while the interpreter waited for it)."""
    rec = tmp_path / "run.jsonl"
    p = PtyProcess([], argv=run_argv(slow_target, "-n", "400", "--no-probe", "--record", rec), cols=120, rows=36)
    try:
        mid_pass(rec)
        n = p.n_bytes()
        p.send("q")
        wait_until(lambda: "\x1b[?1049l" in p.raw()[n:] or p.proc.poll() is not None, 30, "the app leaving its screen")
        t0 = time.monotonic()
        if p.proc.poll() is None:
            try:
                os.kill(p.proc.pid, signal.SIGSTOP)  # frozen in its shutdown while the terminal goes
                p.hang_up()
                os.kill(p.proc.pid, signal.SIGCONT)
            except ProcessLookupError:  # it finished first
                pass
        gone_within(p.proc.pid, GONE_S, t0)
    finally:
        p.close()


@pytest.mark.parametrize("ctty", [True, False], ids=["controlling-tty", "descriptors"])
def test_a_killed_terminal_mid_pass(slow_target, tmp_path, ctty):
    rec = tmp_path / "run.jsonl"
    p = PtyProcess([], argv=run_argv(slow_target, "-n", "400", "--no-probe", "--record", rec), cols=120, rows=36,
                   ctty=ctty)
    try:
        mid_pass(rec)
        t0 = time.monotonic()
        p.hang_up()
        gone_within(p.proc.pid, GONE_S, t0)
        assert p.wait(5) == SIGHUP_STATUS
    finally:
        p.close()
    check_trace(rec)


def _probe_files(cache: Path) -> list[Path]:
    return list((cache / "spectui" / "probe").glob("*.json"))


def measuring(p: PtyProcess, cache: Path, timeout: float = 240.0) -> None:
    """Return once the idle-time probe measures (the run ended; the status line says so): it takes minutes
    on this model, and nothing is cached until it is done."""
    p.wait_for("MEASURING THIS MACHINE", timeout)
    time.sleep(0.5)  # into the probe's decodes
    assert p.proc.poll() is None and not _probe_files(cache)


@pytest.mark.parametrize("stop", ["hang-up", "q"])
def test_a_killed_terminal_or_q_during_the_probe(slow_target, tmp_path, stop):
    """The idle-time probe (the run of 3 tokens has ended) is cut mid-decode: a killed terminal (a controlling
    pty: the kernel's SIGHUP) is gone within 2 s with 129, q within a second with 0; nothing cached."""
    cache = tmp_path / "cache"
    p = PtyProcess([], argv=run_argv(slow_target, "-n", "3"), cols=120, rows=36, ctty=True,
                   env={"XDG_CACHE_HOME": str(cache)})
    try:
        measuring(p, cache)
        t0 = time.monotonic()
        p.hang_up() if stop == "hang-up" else p.send("q")
        gone_within(p.proc.pid, GONE_S if stop == "hang-up" else STOP_S, t0)
        assert p.wait(5) == (SIGHUP_STATUS if stop == "hang-up" else 0)
    finally:
        p.close()
    assert not _probe_files(cache)  # a probe cut short caches nothing


@needs_tmux
def test_tmux_kill_session_mid_pass(slow_target, tmp_path):
    """The issue's terminal: a tmux session killed while a slow pass runs; the app is gone within 2 s."""
    rec = tmp_path / "run.jsonl"
    sock = f"spectui-stop-{os.getpid()}-{time.monotonic_ns()}"
    cmd = shlex.join(run_argv(slow_target, "-n", "400", "--no-probe", "--record", rec))
    repo = Path(__file__).resolve().parents[2]
    subprocess.run(["tmux", "-L", sock, "new-session", "-d", "-s", "t", "-x", "100", "-y", "30",
                    f"cd {repo} && env TERM=xterm-256color {cmd}"], check=True, timeout=10)
    try:
        mid_pass(rec)
        pane_pid = int(subprocess.run(["tmux", "-L", sock, "display-message", "-p", "-t", "t", "#{pane_pid}"],
                                      capture_output=True, text=True, timeout=10).stdout.strip())
        procs = [pr for pr in [psutil.Process(pane_pid), *psutil.Process(pane_pid).children(recursive=True)]
                 if "spectui" in " ".join(pr.cmdline())]
        assert procs
        t0 = time.monotonic()
        subprocess.run(["tmux", "-L", sock, "kill-session", "-t", "t"], timeout=10)
        for pr in procs:
            gone_within(pr.pid, GONE_S, t0)
    finally:
        subprocess.run(["tmux", "-L", sock, "kill-server"], capture_output=True, timeout=10)
    check_trace(rec)
