"""A signal while the models load (before any run starts) ends every command that loads models the project's
way: one line on stderr, 128 + N (143 SIGTERM, 129 SIGHUP, 130 SIGINT), and nothing written (no --record
file, no export, no folder the command made, nothing cached), instead of a death by the default disposition.

Real processes, real llama.cpp, real signals sent by PID. The moment is made certain, not guessed: a model
with a big (padded) vocabulary keeps llama.cpp's loading going for a while, and the test freezes the process
(SIGSTOP) at a moment where it holds the model file open - which only the GGUF check and llama.cpp's loads do;
the file is closed before the first event (checked below) - queues the signal while the process is stopped,
and lets it go on (SIGCONT). No sleep decides the outcome."""

from __future__ import annotations

import os
import pty
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest
from pty_term import read_to_close

from spectui.contract.exitcodes import (
    REDELIVER_S,
    SIGHUP_STATUS,
    SIGINT_STATUS,
    SIGTERM_STATUS,
    Interrupted,
    SignalStop,
)

pytestmark = pytest.mark.slow

REPO = Path(__file__).resolve().parents[2]
STATUS = {signal.SIGTERM: SIGTERM_STATUS, signal.SIGHUP: SIGHUP_STATUS, signal.SIGINT: SIGINT_STATUS}
TERM_HUP = [signal.SIGTERM, signal.SIGHUP]
IDS = ["TERM-143", "HUP-129"]


@pytest.fixture(scope="module")
def slow_model(tiny_model) -> Path:
    """The tiny llama with 100,000 padding tokens (55 MB): llama.cpp spends a few hundred ms on its vocabulary
    and weights, long enough to be caught loading on a busy machine."""
    return tiny_model("slow.gguf", pad=100_000)


def _holds_open(pid: int, path: Path) -> bool:
    try:
        return any(os.readlink(f"/proc/{pid}/fd/{fd}") == str(path) for fd in os.listdir(f"/proc/{pid}/fd"))
    except OSError:  # the process ended, or an fd closed under us
        return False


def _stopped(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat") as fh:
            return fh.read().rsplit(")", 1)[1].split()[0] in ("T", "t")
    except OSError:
        return True  # gone: nothing to wait for


def signal_while_loading(proc: subprocess.Popen, model: Path, sig: int, timeout: float = 120.0) -> None:
    """Deliver ``sig`` to ``proc`` while it is loading ``model``: freeze it when it holds the model file open,
    check again while it is frozen (it cannot move on), queue the signal, resume it."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise AssertionError(f"the process ended (status {proc.returncode}) before it was seen loading")
        if not _holds_open(proc.pid, model):
            time.sleep(0.001)  # a poll, not a wait for an outcome: the phases last hundreds of ms
            continue
        os.kill(proc.pid, signal.SIGSTOP)
        while not _stopped(proc.pid):
            pass
        if _holds_open(proc.pid, model):  # frozen mid-load: the run has not started
            os.kill(proc.pid, sig)
            os.kill(proc.pid, signal.SIGCONT)
            return
        os.kill(proc.pid, signal.SIGCONT)  # caught between two opens: try again
    raise AssertionError("never saw the process loading the model")


def start(*args, env=None, **kw) -> subprocess.Popen:
    opts = {"stdout": subprocess.PIPE, "stderr": subprocess.PIPE, **kw}
    return subprocess.Popen([sys.executable, "-m", "spectui", *[str(a) for a in args]], text=True, cwd=REPO,
                            env={**os.environ, **(env or {})}, **opts)


def finish(proc: subprocess.Popen, timeout: float = 120) -> tuple[str, str]:
    try:
        return proc.communicate(timeout=timeout)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()


def the_line(stderr: str, sig: int) -> str:
    """The one line the stop prints (no traceback, no 'Exception ignored' from a callback)."""
    lines = [ln for ln in stderr.splitlines() if ln.strip()]
    assert len(lines) == 1, stderr
    assert lines[0].startswith("spectui: ") and signal.Signals(sig).name in lines[0], stderr
    return lines[0]


def test_the_model_file_is_closed_before_the_run_starts(slow_model, tmp_path):
    """What makes the moment certain: the process holds the model open while loading only, so a process frozen
    with the file open has not started its run (had it, the trace would exist)."""
    rec = tmp_path / "run.jsonl"
    proc = start("--target", slow_model, "--drafter", "ngram", "--headless", "-p", "the hash map", "-n", 3,
                 "--no-probe", "-t", 1, "--record", rec)
    seen_open = False
    while proc.poll() is None:
        if _holds_open(proc.pid, slow_model):
            os.kill(proc.pid, signal.SIGSTOP)  # frozen, both facts are read at one moment
            while not _stopped(proc.pid):
                pass
            if _holds_open(proc.pid, slow_model):
                seen_open = True
                assert not rec.exists()
            os.kill(proc.pid, signal.SIGCONT)
        time.sleep(0.001)
    out, err = finish(proc)
    assert proc.returncode == 0, err
    assert seen_open and rec.exists()


@pytest.mark.parametrize("sig", TERM_HUP + [signal.SIGINT], ids=IDS + ["INT-130"])
def test_run_headless_record(slow_model, tmp_path, sig):
    rec = tmp_path / "run.jsonl"
    proc = start("--target", slow_model, "--drafter", "ngram", "--headless", "-p", "the hash map", "-n", 3,
                 "--no-probe", "-t", 1, "--record", rec)
    signal_while_loading(proc, slow_model, sig)
    out, err = finish(proc)
    assert proc.returncode == STATUS[sig], err
    assert "before the run started" in the_line(err, sig) and "nothing written" in err
    assert out == ""
    assert list(tmp_path.iterdir()) == []  # no trace, no temporary file


@pytest.mark.parametrize("sig", TERM_HUP, ids=IDS)
def test_run_headless_json(slow_model, tmp_path, sig):
    proc = start("--target", slow_model, "--drafter", "ngram", "--headless", "--json", "-p", "the hash map",
                 "-n", 3, "-k", "auto", "-t", 1, env={"XDG_CACHE_HOME": str(tmp_path)})
    signal_while_loading(proc, slow_model, sig)
    out, err = finish(proc)
    assert proc.returncode == STATUS[sig], err
    the_line(err, sig)
    assert out == ""  # no half JSON object
    assert not list(tmp_path.rglob("*.json"))  # the probe (k=auto) cached nothing


@pytest.mark.parametrize("sig", TERM_HUP, ids=IDS)
def test_run_tui_record(slow_model, tmp_path, sig):
    """The TUI loads on its engine thread: the signal is noted and acted on when the load returns, before
    the app starts (so the terminal is never taken)."""
    rec = tmp_path / "run.jsonl"
    master, slave = pty.openpty()
    try:
        proc = start("--target", slow_model, "--drafter", "ngram", "-p", "the hash map", "-n", 3, "--no-probe",
                     "-t", 1, "--record", rec, stdin=slave, stdout=slave, stderr=slave,
                     env={"TERM": "xterm-256color", "COLUMNS": "100", "LINES": "30"})
        os.close(slave)
        slave = -1
        signal_while_loading(proc, slow_model, sig)
        proc.wait(timeout=120)
        screen = read_to_close(master)
    finally:
        os.close(master)
        if slave >= 0:
            os.close(slave)
    text = screen.decode("utf-8", "replace")
    assert proc.returncode == STATUS[sig], text
    assert "before the run started" in text and signal.Signals(sig).name in text, text
    assert "\x1b[?1049h" not in text  # the app never took the screen
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize("sig", TERM_HUP, ids=IDS)
def test_sweep(slow_model, tmp_path, sig):
    out_json, rec = tmp_path / "sweep.json", tmp_path / "traces"
    proc = start("sweep", "--target", slow_model, "-p", "the hash map", "-n", 3, "-k", 1, "--temp", 0, "-t", 1,
                 "--json", "-o", out_json, "--record-dir", rec)
    signal_while_loading(proc, slow_model, sig)
    out, err = finish(proc)
    assert proc.returncode == STATUS[sig], err
    assert "before the first run" in the_line(err, sig)
    assert out == "" and list(tmp_path.iterdir()) == []  # no export, and the --record-dir it made is gone


def test_bench(slow_model, tmp_path):
    out_json, rec = tmp_path / "bench.json", tmp_path / "traces"
    proc = start("bench", "--target", slow_model, "-n", 3, "-k", 1, "--limit", 1, "-t", 1, "--json", "-o", out_json,
                 "--record-dir", rec)
    signal_while_loading(proc, slow_model, signal.SIGTERM)
    out, err = finish(proc)
    assert proc.returncode == SIGTERM_STATUS, err
    assert "before any run" in the_line(err, signal.SIGTERM)
    assert list(tmp_path.iterdir()) == []


def test_probe(slow_model, tmp_path):
    proc = start("probe", "--target", slow_model, "--max-batch", 2, "--repeats", 1, "-t", 1,
                 env={"XDG_CACHE_HOME": str(tmp_path)})
    signal_while_loading(proc, slow_model, signal.SIGHUP)
    out, err = finish(proc)
    assert proc.returncode == SIGHUP_STATUS, err
    assert "nothing cached" in the_line(err, signal.SIGHUP)
    assert list(tmp_path.iterdir()) == []


def test_race_recording(slow_model, tmp_path):
    """race --target records: stopped while loading, it makes no temporary folder and races nothing."""
    tmp = tmp_path / "tmp"
    tmp.mkdir()
    proc = start("race", "--target", slow_model, "-p", "the hash map", "-n", 3, "-t", 1, "--headless",
                 env={"TMPDIR": str(tmp)})
    signal_while_loading(proc, slow_model, signal.SIGTERM)
    out, err = finish(proc)
    assert proc.returncode == SIGTERM_STATUS, err
    assert "nothing recorded" in the_line(err, signal.SIGTERM)
    assert out == "" and list(tmp.iterdir()) == []


# ------------------------------------------------------------ the handler itself, in this process
def _called_back():
    """Stands for llama.cpp's log callback: the signal handler runs in this frame."""
    signal.raise_signal(signal.SIGTERM)
    return "went on"


def test_a_stop_never_raises_inside_a_callback_from_c():
    """An exception raised in Python that C called back into is printed and dropped by ctypes (the load goes
    on): there the stop is only noted, and raise_if_stopped() raises it after the call."""
    with SignalStop(quiet_in=[_called_back.__code__]) as stop:
        assert _called_back() == "went on"
        assert stop.signum == signal.SIGTERM
        with pytest.raises(Interrupted) as exc:
            stop.raise_if_stopped()
    assert exc.value.status == SIGTERM_STATUS
    with SignalStop() as stop, pytest.raises(Interrupted):  # anywhere else: at once
        _called_back()


def test_the_clean_up_after_raise_if_stopped_is_not_interrupted_again():
    """The stop noted inside a callback and raised by raise_if_stopped() is raised once: its pending re-delivery
    goes with it, so the clean-up that follows (a bench removing the --record-dir it made) runs to its end.
    Before, the re-delivery landed in that clean-up and left the folder behind (CI, under load)."""
    with SignalStop(quiet_in=[_called_back.__code__]) as stop:
        assert _called_back() == "went on"
        with pytest.raises(Interrupted):
            stop.raise_if_stopped()
        t0 = time.monotonic()
        while time.monotonic() - t0 < 10 * REDELIVER_S:  # the clean-up: plain Python, where a signal raises
            pass
        assert stop.signum == signal.SIGTERM


def test_wait_if_paused_takes_no_lock_while_running():
    """The headless loop calls wait_if_paused() every pass on the main thread, where the stop signal's handler
    runs control.stop(), which sets the same event under its lock: had the signal landed while wait_if_paused
    held that lock, the handler would have waited forever for its own thread (the SIGTERM test that hung once
    in a whole-suite run). Running, it must not take the lock at all: here another thread holds it."""
    from spectui.contract.control import RunControl

    control = RunControl()
    held, release = threading.Event(), threading.Event()

    def hold() -> None:
        with control._running._cond:  # the event's own lock, as a stop() in progress would hold it
            held.set()
            release.wait(5)

    holder = threading.Thread(target=hold)
    holder.start()
    held.wait(5)
    t0 = time.monotonic()
    control.wait_if_paused()
    waited = time.monotonic() - t0
    release.set()
    holder.join()
    assert waited < 1.0


def test_a_signal_inside_on_stop_does_not_call_it_again():
    """A second stop signal landing while the first one's on_stop runs (two SIGTERMs at once) is already
    noted: on_stop is not entered again on the same thread, where it would wait for the locks it holds."""
    calls = []

    def on_stop() -> None:
        calls.append(1)
        signal.raise_signal(signal.SIGTERM)  # lands here, at the next instruction
        calls.append(2)

    with SignalStop(on_stop) as stop:
        signal.raise_signal(signal.SIGTERM)
        assert calls == [1, 2] and stop.status() == SIGTERM_STATUS


def test_a_stop_noted_inside_a_callback_raises_once_outside_it():
    """A command that never calls raise_if_stopped() again (a probe measuring, its contexts logging as they are
    made) still stops: the noted signal comes again until it lands outside the callback, and raises there,
    within a few of its re-deliveries; a first SIGINT so delivered is no second SIGINT."""
    for sig, status in ((signal.SIGTERM, SIGTERM_STATUS), (signal.SIGINT, SIGINT_STATUS)):
        def called_back(sig=sig):
            signal.raise_signal(sig)
            return "went on"

        with SignalStop(quiet_in=[called_back.__code__]), pytest.raises(Interrupted) as exc:
            assert called_back() == "went on"
            t0 = time.monotonic()
            while time.monotonic() - t0 < 2.0:  # the work after the callback: plain Python
                pass
        assert exc.value.status == status
        assert time.monotonic() - t0 < 20 * REDELIVER_S



async def test_the_tui_takes_the_signals_over_and_acts_on_one_noted_while_it_started():
    """Between the loading's last check and the app's own handlers nothing meets the default disposition: the
    run's SignalStop (hand_over) stays installed, the app installs its quit over it and quits at once, with
    the signal's status, for a signal noted in between."""
    from spectui.contract.control import RunControl
    from spectui.contract.events import Settings
    from spectui.recording.synthetic import sample_events
    from spectui.tui.run.app import SpectuiApp
    from spectui.tui.shared.lifecycle import exit_status

    events = sample_events()
    with SignalStop(lambda: None, hand_over=True) as stop:
        os.kill(os.getpid(), signal.SIGHUP)  # noted by the loading's handler, as the app starts
        assert stop.signum == signal.SIGHUP
        app = SpectuiApp(lambda c, p: iter(events), RunControl(Settings(draft_max=2)))
        async with app.run_test(size=(80, 24)) as pilot:
            await pilot.pause()
            assert signal.getsignal(signal.SIGTERM) != stop._handler  # the app's own quit is installed
        assert exit_status(app) == SIGHUP_STATUS
        assert app.control.stopped


async def test_a_command_that_keeps_the_signals_is_left_with_them():
    """spectui cast renders an app under its own SignalStop (no hand_over): the app installs nothing over it."""
    from spectui.contract.control import RunControl
    from spectui.contract.events import Settings
    from spectui.recording.synthetic import sample_events
    from spectui.tui.run.app import SpectuiApp

    events = sample_events()
    with SignalStop(lambda: None) as stop:
        app = SpectuiApp(lambda c, p: iter(events), RunControl(Settings(draft_max=2)))
        async with app.run_test(size=(80, 24)) as pilot:
            await pilot.pause()
            assert signal.getsignal(signal.SIGTERM) == stop._handler
            await pilot.press("q")
