"""Exit statuses scripts can trust (README, "Exit statuses"), every row for every subcommand, with real
processes and real signals: 0 done, 1 the run failed, 2 bad usage or input, 130 SIGINT, 143 SIGTERM,
129 SIGHUP (the trace still flushed and replayable, the partial summary printed). The TUI faces in a real
tmux pane. Real llama.cpp on the tiny models, real sockets for attach; no mocks. A row that checks an exit
status without a signal takes the ``cli`` fixture: the command in the test's process in the fast lane, as its
own process in the full suite (tests/in_process.py)."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from in_process import spectui_in_process
from servers import SilentServer, StaticServer, free_port
from tmux_pane import needs_tmux, pane_factory, spectui_cmd  # noqa: F401 - pane_factory is a fixture
from waits import Started, wait_until

from spectui.contract.exitcodes import FAILED, OK, SIGHUP_STATUS, SIGINT_STATUS, SIGTERM_STATUS, USAGE, for_run_end
from spectui.recording.trace import read_trace, synthetic_run, write_trace

REPO = Path(__file__).resolve().parents[2]
SIGNALS = [pytest.param(signal.SIGINT, SIGINT_STATUS, marks=pytest.mark.slow), (signal.SIGTERM, SIGTERM_STATUS),
           pytest.param(signal.SIGHUP, SIGHUP_STATUS, marks=pytest.mark.slow)]  # the fast lane: SIGTERM
SIG_IDS = ["INT-130", "TERM-143", "HUP-129"]
# CPU seconds a command has used once it is into its work (its signal handlers are in at about 0.1 s; a whole
# probe on the tiny model, imports and loading included, takes about 0.45 s; a cast of 3000 passes renders for
# over 40 s and a probe of 400 repeats measures for over 20 s)
RENDERING_CPU_S, MEASURING_CPU_S = 0.5, 0.6
LLAMA_LIKE = ("# TYPE llamacpp:spec_decode_num_drafts_total counter\n"
              "llamacpp:spec_decode_num_drafts_total 0\n")


def spectui(*args, module: str = "spectui", timeout: float = 120, env=None) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", module, *[str(a) for a in args]], capture_output=True, text=True,
                          cwd=REPO, timeout=timeout, env={**os.environ, **(env or {})})


@pytest.fixture(params=["in_process", pytest.param("process", marks=pytest.mark.slow)])
def cli(request):
    """How a command runs: in this process through click's CliRunner (the fast lane), or as its own process
    (the full suite)."""
    return spectui_in_process if request.param == "in_process" else spectui


def start(*args, module: str = "spectui", env=None) -> Started:
    return Started([sys.executable, "-m", module, *[str(a) for a in args]], cwd=REPO,
                   env={**os.environ, **(env or {})})


def stop_with(proc: Started, sig: int, timeout: float = 60) -> tuple[str, str]:
    return proc.stop_with(sig, timeout)


def one_error_line(stderr: str) -> str:
    lines = [ln for ln in stderr.splitlines() if ln.strip()]
    assert len(lines) == 1 and lines[0].startswith("spectui: error: "), stderr
    return lines[0]


@pytest.fixture
def trace(tmp_path) -> Path:
    p = tmp_path / "run.jsonl"
    write_trace(p, list(synthetic_run(200)))
    return p


@pytest.fixture
def long_prompt(tmp_path) -> Path:
    p = tmp_path / "long.txt"
    p.write_text("the cat sat on the mat and " * 60)
    return p


# ------------------------------------------------------------------ run (headless)


@pytest.mark.slow  # seconds of processes or large inputs: the full suite runs it, the fast lane does not
def test_run_0_done(tiny_target, tiny_draft_noisy):
    r = spectui("-m", tiny_target, "-md", tiny_draft_noisy, "--headless", "-p", "the cat", "-n", 8, "-t", 1,
                "--no-probe")
    assert r.returncode == OK, r.stderr
    assert "encoded" in r.stdout and "decoded" in r.stdout


@pytest.mark.slow  # seconds of processes or large inputs: the full suite runs it, the fast lane does not
def test_run_1_prompt_does_not_fit_and_prints_no_false_numbers(tiny_target, long_prompt):
    r = spectui("-m", tiny_target, "--drafter", "ngram", "--headless", "-c", 64, "-f", long_prompt, "-t", 1,
                "--no-probe")
    assert r.returncode == FAILED, r.stdout + r.stderr
    assert "does not fit the context (-c 64)" in r.stderr and "does not fit" in r.stdout
    assert "seconds" not in r.stdout and "0.000" not in r.stdout  # no "encoded 901 tokens in 0.000 seconds"
    assert "not evaluated" in r.stdout and "nothing was decoded" in r.stdout


@pytest.mark.slow  # seconds of processes or large inputs: the full suite runs it, the fast lane does not
def test_run_1_prompt_does_not_fit_json(tiny_target, long_prompt):
    import json

    r = spectui("-m", tiny_target, "--drafter", "ngram", "--headless", "--json", "-c", 64, "-f", long_prompt,
                "-t", 1, "--no-probe")
    assert r.returncode == FAILED
    assert "does not fit" in json.loads(r.stdout)["error"]


@pytest.mark.slow  # seconds of processes or large inputs: the full suite runs it, the fast lane does not
def test_run_1_empty_prompt(tiny_target):
    r = spectui("-m", tiny_target, "--drafter", "ngram", "--headless", "-p", "", "-t", 1, "--no-probe")
    assert r.returncode == FAILED, r.stdout + r.stderr
    assert "the prompt is empty" in r.stderr


def test_run_1_model_fails_mid_run(make_engine, tiny_target, tiny_draft_noisy):
    """A failure inside the engine after some passes (the real engine; its per-pass hook raises as a
    failing llama_decode would): the run ends with RunEnded.error, which is exit status 1 in every face."""
    from spectui.contract.control import RunControl
    from spectui.contract.events import Settings
    from spectui.text.run import consume

    engine = make_engine(tiny_target, tiny_draft_noisy)

    def hook(info):
        if info["index"] == 3:
            raise RuntimeError("llama_decode returned -1")

    engine.debug_hook = hook
    try:
        import io

        stats = consume(engine.run("the cat", RunControl(Settings(draft_max=2)), 40), io.StringIO())
    finally:
        engine.debug_hook = None
    assert stats.end.error and "llama_decode returned -1" in stats.end.error
    assert for_run_end(stats.end) == FAILED


async def test_run_tui_exit_status_is_1_after_a_failed_run(make_engine, tiny_target):
    from spectui.contract.control import RunControl
    from spectui.contract.events import Settings
    from spectui.tui.run.app import SpectuiApp
    from spectui.tui.shared.lifecycle import exit_status

    engine = make_engine(tiny_target, n_ctx=16)
    app = SpectuiApp(lambda ctl, p: engine.run(p, ctl, 8), RunControl(Settings(draft_max=0, drafter="none")),
                     prompt="the cat sat on the mat and the dog sat on the log " * 3)
    async with app.run_test(size=(100, 30)) as pilot:
        for _ in range(100):
            await pilot.pause(0.05)
            if app.state.end is not None and not app.running:
                break
        assert "does not fit" in app.state.end.error
        await pilot.press("q")
    assert exit_status(app, failed=app.run_failed()) == FAILED


@pytest.mark.parametrize("args", [["-k", "99"], pytest.param(["--temp", "5"], marks=pytest.mark.slow),
                                  pytest.param(["--bogus"], marks=pytest.mark.slow), ["-m", "/no/such.gguf"]],
                         ids=["k", "temp", "usage", "missing"])
def test_run_2_bad_usage_or_input(tiny_target, args, cli):
    base = [] if "-m" in args else ["-m", tiny_target, "--drafter", "ngram"]
    r = cli(*base, "--headless", "-p", "x", *args)
    assert r.returncode == USAGE, r.stderr
    assert "Traceback" not in r.stderr


@pytest.mark.slow  # seconds of processes or large inputs: the full suite runs it, the fast lane does not
@pytest.mark.parametrize("sig,status", SIGNALS, ids=SIG_IDS)
def test_run_signals_flush_a_replayable_trace(tiny_target, tiny_draft_noisy, tmp_path, sig, status):
    rec = tmp_path / "t.jsonl"
    proc = start("-m", tiny_target, "-md", tiny_draft_noisy, "--headless", "-p", "the cat", "-n", 100000, "-c", 8192,
                 "-t", 1, "--no-probe", "-k", 8, "--record", rec)
    wait_until(lambda: rec.exists() and rec.read_text().count('"type":"pass"') >= 5, what="5 passes on disk")
    out, err = stop_with(proc, sig)
    assert proc.returncode == status, err
    assert "stopped by the user" in out  # the summary was printed
    tr = read_trace(rec)
    assert tr.warnings == [] and tr.events[-1].type == "end" and tr.events[-1].reason == "stopped"
    r = spectui("replay", rec, "--headless")
    assert r.returncode == OK and "stopped by the user" in r.stdout


# ------------------------------------------------------------------ replay


@pytest.mark.slow  # seconds of processes or large inputs: the full suite runs it, the fast lane does not
def test_replay_0_and_2(trace, tmp_path):
    assert spectui("replay", trace, "--headless").returncode == OK
    bad = tmp_path / "bad.jsonl"
    bad.write_text("hello\n")
    r = spectui("replay", bad, "--headless")
    assert r.returncode == USAGE and "not a spectui trace" in one_error_line(r.stderr)
    r = spectui("replay", trace, "--headless", "--theme", "nonexistent")
    assert r.returncode == USAGE and "unknown theme" in one_error_line(r.stderr)


@pytest.mark.slow  # seconds of processes or large inputs: the full suite runs it, the fast lane does not
@pytest.mark.parametrize("sig,status", SIGNALS, ids=SIG_IDS)
def test_replay_headless_signals_print_the_summary_so_far(trace, sig, status):
    proc = start("replay", trace, "--headless", "--speed", "0.25")
    wait_until(lambda: proc.stopped_by_its_handler() and proc.printed(), what="the replay's first text")
    out, err = stop_with(proc, sig)
    assert proc.returncode == status, err
    assert "n_predict" in out and "Traceback" not in err


# ------------------------------------------------------------------ cast


@pytest.mark.slow  # seconds of processes or large inputs: the full suite runs it, the fast lane does not
def test_cast_0_and_2(cli, tmp_path):
    out = tmp_path / "x.cast"
    small = tmp_path / "small.jsonl"
    write_trace(small, list(synthetic_run(4)))
    r = cli("cast", small, "-o", out, "--cols", 80, "--rows", 24, "--speed", 8)
    assert r.returncode == OK, r.stderr
    r = cli("cast", small, "-o", small)
    assert r.returncode == USAGE and "input" in one_error_line(r.stderr)
    r = cli("cast", small, "-o", out, "--theme", "nonexistent")
    assert r.returncode == USAGE


@pytest.mark.slow  # seconds of processes or large inputs: the full suite runs it, the fast lane does not
@pytest.mark.parametrize("sig,status", SIGNALS, ids=SIG_IDS)
def test_cast_signals_write_nothing(tmp_path, sig, status):
    big = tmp_path / "big.jsonl"
    write_trace(big, list(synthetic_run(3000)))
    out = tmp_path / "x.cast"
    proc = start("cast", big, "-o", out, "--speed", 8)
    wait_until(lambda: proc.stopped_by_its_handler(cpu_s=RENDERING_CPU_S), what="the cast rendering")
    _, err = stop_with(proc, sig)
    assert proc.returncode == status, err
    assert "not written" in err and not out.exists()
    assert not [f for f in tmp_path.iterdir() if f.name.endswith(".part")]


# ------------------------------------------------------------------ demo


@pytest.mark.slow  # seconds of processes or large inputs: the full suite runs it, the fast lane does not
def test_demo_0_and_2():
    r = spectui("demo", "--headless", "--act", 2)
    assert r.returncode == OK, r.stderr
    r = spectui("demo", "--headless", "--theme", "nonexistent")
    assert r.returncode == USAGE and "available themes" in one_error_line(r.stderr)


@pytest.mark.slow  # the headless player's signals: test_replay_headless_signals_print_the_summary_so_far
@pytest.mark.parametrize("sig,status", SIGNALS, ids=SIG_IDS)
def test_demo_headless_signals(sig, status):
    proc = start("demo", "--headless", "--act", 1, "--speed", "0.25")
    wait_until(lambda: proc.stopped_by_its_handler() and proc.printed(), what="the act's reason")
    reason = len(proc.printed())
    wait_until(lambda: len(proc.printed()) > reason, what="the act's first text")
    out, err = stop_with(proc, sig)
    assert proc.returncode == status, err
    assert "n_predict" in out  # the act's summary so far


# ------------------------------------------------------------------ sweep


@pytest.mark.slow  # seconds of processes or large inputs: the full suite runs it, the fast lane does not
def test_sweep_0_and_2(tiny_target):
    r = spectui("sweep", "-m", tiny_target, "--drafter", "ngram", "-k", 2, "--temp", 0, "-n", 8, "-t", 1, "--csv")
    assert r.returncode == OK, r.stderr
    r = spectui("sweep", "-m", tiny_target, "--drafter", "ngram", "-k", "2,x")
    assert r.returncode == USAGE and "comma-separated" in one_error_line(r.stderr)


@pytest.mark.slow  # seconds of processes or large inputs: the full suite runs it, the fast lane does not
@pytest.mark.parametrize("sig,status", SIGNALS, ids=SIG_IDS)
def test_sweep_signals_report_the_runs_done(tiny_target, tiny_draft_noisy, tmp_path, sig, status):
    rec = tmp_path / "rec"
    out = tmp_path / "sweep.json"
    proc = start("sweep", "-m", tiny_target, "-md", tiny_draft_noisy, "-k", "1,2,3,4,5,6", "--temp", "0,0.5",
                 "-n", 300, "-c", 4096, "-t", 1, "--record-dir", rec, "--json", "-o", out)
    wait_until(lambda: rec.exists() and len(list(rec.iterdir())) >= 2, what="the second run's trace")
    _, err = stop_with(proc, sig)
    assert proc.returncode == status, err
    assert f"sweep stopped by {signal.Signals(sig).name}" in err
    import json

    data = json.loads(out.read_text())
    assert data["params"]["stopped_by"] == signal.Signals(sig).name and len(data["runs"]) >= 1
    for f in rec.iterdir():  # every trace, the one cut short included, replays
        assert read_trace(f).events[-1].type == "end"


# ------------------------------------------------------------------ probe


def test_probe_0_and_2(cli, tiny_target, tmp_path, monkeypatch):
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))  # the in-process run and the child process alike
    r = cli("probe", "-m", tiny_target, "--max-batch", 2, "--repeats", 1, "-t", 1)
    assert r.returncode == OK, r.stderr
    r = cli("probe", "-m", tiny_target, "--max-batch", 1)
    assert r.returncode == USAGE and "--max-batch" in one_error_line(r.stderr)


@pytest.mark.slow  # seconds of processes or large inputs: the full suite runs it, the fast lane does not
@pytest.mark.parametrize("sig,status", SIGNALS, ids=SIG_IDS)
def test_probe_signals_cache_nothing(tiny_target, tmp_path, sig, status):
    proc = start("probe", "-m", tiny_target, "--max-batch", 64, "--repeats", 400, "-t", 1,
                 env={"XDG_CACHE_HOME": str(tmp_path)})
    wait_until(lambda: proc.stopped_by_its_handler(cpu_s=MEASURING_CPU_S), what="the probe measuring")
    _, err = stop_with(proc, sig)
    assert proc.returncode == status, err
    assert "nothing cached" in err
    cache = tmp_path / "spectui" / "probe"
    assert not cache.exists() or not list(cache.glob("*.json"))


# ------------------------------------------------------------------ attach


@pytest.fixture
def good():
    s = StaticServer(LLAMA_LIKE, "text/plain; version=0.0.4")
    yield s
    s.stop()


@pytest.fixture
def silent():
    s = SilentServer()
    yield s
    s.stop()


@pytest.fixture
def e501():
    s = StaticServer('{"error":{"code":501,"message":"This server does not support metrics endpoint."}}',
                     "application/json", 501)
    yield s
    s.stop()


def test_attach_0_done(good, cli):
    r = cli("attach", good.url, "--interval", 0.1, "--count", 2, "--headless")
    assert r.returncode == OK, r.stderr


def test_attach_1_refused_with_count(cli):
    r = cli("attach", f"http://127.0.0.1:{free_port()}", "--interval", 0.1, "--count", 2, "--headless")
    assert r.returncode == FAILED
    assert "never answered: connection refused" in r.stderr


@pytest.mark.slow  # seconds of processes or large inputs: the full suite runs it, the fast lane does not
def test_attach_1_http_501_and_html(e501):
    r = spectui("attach", e501.url, "--interval", 0.1, "--count", 1, "--headless")
    assert r.returncode == FAILED and "HTTP 501" in r.stderr
    html = StaticServer("<!DOCTYPE html><html></html>")
    try:
        r = spectui("attach", html.url, "--interval", 0.1, "--count", 1, "--json")
        assert r.returncode == FAILED and "not Prometheus" in r.stderr
    finally:
        html.stop()


def test_attach_1_a_server_that_never_answers_ends_with_count(silent, cli):
    t = time.monotonic()
    r = cli("attach", silent.url, "--interval", 0.2, "--timeout", 0.2, "--count", 2, "--headless", timeout=60)
    assert r.returncode == FAILED and "timed out" in r.stderr
    assert time.monotonic() - t < 30


@pytest.mark.slow  # waits out --duration 2; the --count deadline stays in the fast lane
def test_attach_1_request_mode_deadline_against_a_silent_server(silent):
    r = spectui("attach", silent.url, "-p", "hi", "--interval", 0.2, "--timeout", 0.2, "--duration", 2,
                "--headless", timeout=60)
    assert r.returncode == FAILED and "did not finish" in r.stderr


def test_attach_1_request_refused_and_501(e501, cli):
    r = cli("attach", f"http://127.0.0.1:{free_port()}", "-p", "hi", "-n", 4, "--interval", 0.2, "--headless")
    assert r.returncode == FAILED and "the request failed: connection refused" in r.stderr
    r = cli("attach", e501.url, "-p", "hi", "-n", 4, "--interval", 0.2, "--headless")
    assert r.returncode == FAILED and "HTTP 501" in r.stderr


@pytest.mark.parametrize("url", ["htp:/bad url", pytest.param("", marks=pytest.mark.slow), "http://127.0.0.1:99999",
                                 pytest.param("ftp://h:1", marks=pytest.mark.slow),
                                 pytest.param("http://:8080", marks=pytest.mark.slow),
                                 pytest.param("http://h:port", marks=pytest.mark.slow)])
def test_attach_2_bad_urls_before_any_scrape(url, cli):
    r = cli("attach", url, "--headless", "--count", 1)
    assert r.returncode == USAGE
    assert one_error_line(r.stderr).startswith("spectui: error: attach: ")
    assert r.stdout == ""  # nothing scraped, nothing printed


@pytest.mark.parametrize("sig,status", SIGNALS, ids=SIG_IDS)
def test_attach_signals(good, tmp_path, sig, status):
    rec = tmp_path / "a.jsonl"
    proc = start("attach", good.url, "--interval", 0.1, "--headless", "--record", rec)
    wait_until(lambda: rec.exists() and rec.stat().st_size > 200, what="the attach trace")
    wait_until(lambda: proc.stopped_by_its_handler() and
               sum(ln.startswith("t=") for ln in proc.printed().splitlines()) >= 2, what="two scrapes printed")
    out, err = stop_with(proc, sig)
    assert proc.returncode == status, err
    assert "since start" in out
    assert read_trace(rec).events[-1].type == "attach_end"


# ------------------------------------------------------------------ the TUI faces, in a real terminal


@needs_tmux
@pytest.mark.parametrize("sig,status", SIGNALS, ids=SIG_IDS)
@pytest.mark.parametrize("face", ["run", "replay", "demo", "attach"])
def test_tui_faces_exit_with_the_signal_status(pane_factory, tiny_target, tiny_draft_noisy, trace, good, tmp_path,
                                              face, sig, status):
    rec = tmp_path / "tui.jsonl"
    args = {
        "run": f"-m {tiny_target} -md {tiny_draft_noisy} -p 'the cat' -n 100000 -c 8192 -t 1 --no-probe "
               f"--record {rec}",
        "replay": f"replay {trace} --speed 0.25",
        "demo": "demo --act 1",
        "attach": f"attach {good.url} --interval 0.2",
    }[face]
    pane = pane_factory(spectui_cmd(args))
    pane.wait_for({"run": "acceptance by draft position", "replay": "REPLAY of", "demo": "REPLAY of",
                   "attach": "llama-server"}[face], timeout=90)
    time.sleep(0.5)
    os.kill(pane.app_pid(), sig)
    assert pane.exit_status(timeout=30) == status, pane.capture()
    assert pane.fmt("#{alternate_on}") == "0"
    if face == "run":
        tr = read_trace(rec)
        assert tr.warnings == [] and tr.events[-1].type == "end"


@needs_tmux
def test_tui_ctrl_c_key_is_130_and_q_is_0(pane_factory, trace):
    pane = pane_factory(spectui_cmd(f"replay {trace} --speed 0.25"))
    pane.wait_for("REPLAY of")
    pane.send("C-c")
    assert pane.exit_status() == SIGINT_STATUS
    pane2 = pane_factory(spectui_cmd(f"replay {trace} --speed 0.25"))
    pane2.wait_for("REPLAY of")
    pane2.send("q")
    assert pane2.exit_status() == OK


def test_sweep_1_a_run_that_fails(make_engine, tiny_target, tiny_draft_noisy):
    """A sweep run whose engine fails mid-run (the real engine; its per-pass hook raises as a failing
    llama_decode would) is SweepRunFailed: exit status 1, the run failed, not bad input."""
    from spectui.sweep.plan import make_plan
    from spectui.sweep.runner import SweepRunFailed, run_sweep

    engine = make_engine(tiny_target, tiny_draft_noisy)

    def hook(info):
        if info["index"] == 2:
            raise RuntimeError("llama_decode returned -1")

    engine.debug_hook = hook
    try:
        with pytest.raises(SweepRunFailed, match="failed: RuntimeError: llama_decode returned -1") as info:
            run_sweep(engine, "the cat", make_plan([2], [0.0], 1, "model"), 16, 0)
    finally:
        engine.debug_hook = None
    assert info.value.exit_code == FAILED
