"""Losing the terminal ends the run, and a face without a terminal refuses to start.

Every TUI face (run, replay, demo, race, attach) needs a terminal on stdin, stdout and stderr; without one
(`ssh host spectui demo` without -t, a pipe) or with TERM=dumb it says so in one line and exits 2, before
loading anything. In a real pty (tests/pty_term.py): a hung-up terminal (its master closed) ends the face
with 129 (SIGHUP's status) and the trace so far flushed, whether or not the pty is the process's
controlling terminal; SIGTERM and SIGHUP end it even while its writes are blocked (a terminal that stopped
reading), within the stop's deadline.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from pty_term import PtyProcess, read_to_close  # noqa: E402
from waits import catches, wait_until  # noqa: E402

from spectui.commands.demo import ACTS, demo_trace_path, race_paths  # noqa: E402
from spectui.contract.errors import SpectuiError  # noqa: E402
from spectui.contract.exitcodes import SIGHUP_STATUS, SIGTERM_STATUS, USAGE  # noqa: E402
from spectui.tui.shared.terminal import NEEDS_TERMINAL, require_terminal, terminal_problem  # noqa: E402

REPO = Path(__file__).resolve().parent.parent.parent
DEADLINE_S = 3.0 + 5.0  # the stop's deadline (tui.shared.app.STOP_GRACE_S) and a margin on a loaded machine


def _ends_within_the_deadline(p: PtyProcess, stop, status: int) -> None:
    """``stop()`` (a hang-up, a signal): the face ends with ``status`` within the stop's deadline."""
    t0 = time.monotonic()
    stop()
    assert p.wait(30) == status
    assert time.monotonic() - t0 < DEADLINE_S


def _face_args(face: str, tiny_target=None) -> list[str]:
    return {
        "demo": ["demo"],
        "demo-act-3": ["demo", "--act", "3"],
        "replay": ["replay", demo_trace_path(2)],
        "race": ["race", *race_paths(ACTS[2])[:2]],
        "attach": ["attach", "http://127.0.0.1:1"],
        "run": ["--target", tiny_target, "--drafter", "ngram", "-p", "hi", "-n", "4"],
    }[face]


FACES = ["demo", "demo-act-3", "replay", "race", "attach", "run"]


@pytest.mark.parametrize("face", FACES)
@pytest.mark.parametrize("which", ["stdin", "stdout"])
def test_without_a_terminal_every_face_refuses_in_one_line(face, which, tiny_target, tmp_path):
    """stdin or stdout not a terminal (ssh without -t, a pipe): one line, exit 2, nothing drawn."""
    args = _face_args(face, tiny_target)
    env = {**os.environ, "PYTHONPATH": str(REPO), "TERM": "xterm-256color"}
    env.pop("TEXTUAL_DRIVER", None)
    if which == "stdin":  # stdout a terminal, stdin not: a pty for stdout and stderr only
        import pty

        master, slave = pty.openpty()
        try:
            r = subprocess.run([sys.executable, "-m", "spectui", *map(str, args)], stdin=subprocess.DEVNULL,
                               stdout=slave, stderr=slave, cwd=REPO, env=env, timeout=120)
            os.close(slave)
            slave = -1
            out = read_to_close(master)
        finally:
            os.close(master)
            if slave >= 0:
                os.close(slave)
        text = out.decode("utf-8", "replace")
        assert r.returncode == USAGE, text
        lines = [ln for ln in text.splitlines() if ln.strip()]
        assert len(lines) == 1 and NEEDS_TERMINAL in lines[0] and "stdin is not a terminal" in lines[0], text
        assert "\x1b[?1049h" not in text  # the screen was never taken
        return
    r = subprocess.run([sys.executable, "-m", "spectui", *map(str, args)], capture_output=True, text=True,
                       stdin=subprocess.DEVNULL, cwd=REPO, env=env, timeout=120)
    assert r.returncode == USAGE, r.stderr
    lines = [ln for ln in r.stderr.splitlines() if ln.strip()]
    assert len(lines) == 1, r.stderr
    assert lines[0].startswith("spectui: error: ") and NEEDS_TERMINAL in lines[0], lines[0]
    assert r.stdout == ""


@pytest.mark.parametrize("face", ["demo", "replay", "run"])
def test_term_dumb_is_refused(face, tiny_target):
    p = PtyProcess(_face_args(face, tiny_target), env={"TERM": "dumb"})
    try:
        assert p.wait(60) == USAGE, p.raw()
        wait_until(lambda: "TERM=dumb" in p.text(), 10, "the refusal read from the terminal")
        assert NEEDS_TERMINAL in p.text() and "TERM=dumb" in p.text()
        assert "\x1b[?1049h" not in p.raw()
    finally:
        p.close()


def test_the_check_itself():
    class Tty:
        def __init__(self, fd):
            self.fd = fd

        def fileno(self):
            return self.fd

    import pty

    master, slave = pty.openpty()
    try:
        tty = Tty(slave)
        assert terminal_problem({"TERM": "xterm"}, (tty, tty, tty)) == ""
        assert terminal_problem({"TERM": "dumb"}, (tty, tty, tty)) == "TERM=dumb"
        assert terminal_problem({"TERM": "xterm"}, (tty, None, tty)) == "stdout is not a terminal"
        assert terminal_problem({"TERM": "xterm"}, (tty, tty, object())) == "stderr is not a terminal"
        # textual-serve's sessions run on pipes with the web driver: their screen is the browser's
        assert terminal_problem({"TEXTUAL_DRIVER": "textual.drivers.web_driver:WebDriver"}, (None, None, None)) == ""
        with pytest.raises(SpectuiError, match="spectui demo needs a terminal: use ssh -t, or --headless"):
            require_terminal("spectui demo", {"TERM": "xterm"}, (None, tty, tty))
    finally:
        os.close(master)
        os.close(slave)


@pytest.mark.parametrize("ctty", [False, pytest.param(True, marks=pytest.mark.slow)],
                         ids=["descriptors", "controlling-tty"])
@pytest.mark.parametrize("face", ["demo", "demo-act-3"])
def test_a_hung_up_terminal_ends_the_face(face, ctty):
    """The terminal closes (its master): with a controlling terminal the kernel's SIGHUP, without one the
    descriptors' hang-up; either way the face ends with 129 within the deadline."""
    p = PtyProcess([*_face_args(face), "--speed", "8"], ctty=ctty)
    try:
        p.wait_for("spectui demo: ", 60)
        wait_until(lambda: catches(p.proc.pid, signal.SIGTERM, signal.SIGHUP) is not False, 60, "the face's stop")
        _ends_within_the_deadline(p, p.hang_up, SIGHUP_STATUS)
    finally:
        p.close()


@pytest.mark.parametrize("sig,status", [(signal.SIGTERM, SIGTERM_STATUS), (signal.SIGHUP, SIGHUP_STATUS)],
                         ids=["SIGTERM", "SIGHUP"])
@pytest.mark.slow  # seconds of a terminal that stopped reading
def test_signals_end_a_face_whose_terminal_stopped_reading(sig, status):
    """The terminal stops reading (a stalled SSH link): the app's writes block, its event loop with them;
    a signal still ends it, with its status, within the stop's deadline."""
    p = PtyProcess(["demo", "--act", "1", "--speed", "8"], cols=160, rows=50)
    try:
        p.wait_for("spectui demo: ", 60)
        p.stop_reading()
        time.sleep(3.0)  # the pty's buffer fills, Textual's writer blocks, then its queue
        _ends_within_the_deadline(p, lambda: p.proc.send_signal(sig), status)
    finally:
        p.close()


def test_a_live_run_that_loses_its_terminal_keeps_its_trace(tiny_target, tiny_draft_noisy, tmp_path):
    """A live run on the tiny models, recorded: the terminal hangs up mid-run; the run ends with 129 and the
    trace so far is whole and replayable (every line written, the last a pass or the end)."""
    from spectui.contract.events import PassEvent
    from spectui.recording.trace import read_trace

    rec = tmp_path / "run.jsonl"
    p = PtyProcess(["--target", tiny_target, "--draft", tiny_draft_noisy, "-p", "the cat", "-n", "100000",
                    "-c", "8192", "-t", "1", "--no-probe", "--record", rec], env={"XDG_CACHE_HOME": str(tmp_path)})
    try:
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline and (not rec.exists() or rec.stat().st_size < 20_000):
            assert p.proc.poll() is None, p.text()[-2000:]
            time.sleep(0.2)
        _ends_within_the_deadline(p, p.hang_up, SIGHUP_STATUS)
    finally:
        p.close()
    _header, events, warnings = read_trace(str(rec))
    assert warnings == []
    assert sum(isinstance(e, PassEvent) for e in events) > 10
