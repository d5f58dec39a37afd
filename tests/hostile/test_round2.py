"""The second hostile-input report (../shared/reports/bad-input-2026-12-02.md, issue 37) re-run: each failing
row it names, by its id, as a real process (``python -m spectui``), against real servers on 127.0.0.1
(tests/hostile/fake_servers.py) started and stopped here, and real files, links and FIFOs. The rows that
check only a command's exit status and lines (the ``cli`` fixture) run it in the test's process in the fast
lane and as a process in the full suite (tests/in_process.py); signals, FIFOs and locales stay processes.
The ``serve`` rows (SV06, SV07, SV09) and the attach position-label rows (AT19118, TUI_att19103) are tested
with their own code (tests/tui/test_serve_*.py, tests/attach/).

The traces are written here (tests/hostile/round2_traces.py): a small well-formed run whose pass 1 carries
the hostile text or number.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import click
import pytest
from fake_servers import FakeServer
from in_process import both_ways, spectui_in_process
from peak_rss import run_peak
from round2_traces import WIDE_TOKENS, long_texts, text_trace, with_pass_field

from spectui.contract.params import SPEED_MAX, GpuLayers, Speed
from spectui.contract.text import cells, cut, is_forbidden, json_text, visible, visible_cells, visible_line

REPO = Path(__file__).resolve().parents[2]
RAW = ("\x1b", "\x07", "\x9b")  # what must never reach the terminal raw


def spectui(*args: str, env: dict | None = None, timeout: float = 120, cwd=None) -> subprocess.CompletedProcess:
    e = dict(os.environ, PYTHONPATH=str(REPO), NO_COLOR="1")
    e.update(env or {})
    return subprocess.run([sys.executable, "-m", "spectui", *map(str, args)], stdin=subprocess.DEVNULL,
                          capture_output=True, env=e, timeout=timeout, cwd=cwd)


def in_process(*args: str, env: dict | None = None, timeout: float = 120, cwd=None) -> subprocess.CompletedProcess:
    """``spectui`` above in this process (tests/in_process.py), its output bytes as the process's."""
    return spectui_in_process(*args, env={"NO_COLOR": "1", **(env or {})}, text=False, cwd=cwd)


cli = both_ways(spectui, in_process)  # a command's exit status and lines: in this process in the fast lane


def peak(*args: str, timeout: float = 120) -> tuple[int, float, float, bytes, bytes]:
    """(exit status, seconds, peak RSS in MB, stdout, stderr) of ``python -m spectui ARGS``, the RSS its own
    (tests/hostile/peak_rss.py)."""
    return run_peak(*args, timeout=timeout)


def ended(*args: str) -> tuple[int, float, bytes, bytes]:
    """(exit status, seconds, stdout, stderr) of ``python -m spectui ARGS`` (``peak`` above)."""
    rc, s, _mb, out, err = peak(*args)
    return rc, s, out, err


def ended_in_process(*args: str) -> tuple[int, float, bytes, bytes]:
    """``ended`` with the command in this process (tests/in_process.py)."""
    t0 = time.monotonic()
    r = in_process(*args)
    return r.returncode, time.monotonic() - t0, r.stdout, r.stderr


@pytest.fixture(params=["in_process", pytest.param("process", marks=pytest.mark.slow)])
def timed(request):
    """``ended`` in this process (the fast lane) or as its own process (the full suite)."""
    return ended_in_process if request.param == "in_process" else ended


def one_line(err: bytes) -> str:
    lines = [ln for ln in err.decode("utf-8", "replace").splitlines() if ln.strip()]
    assert len(lines) == 1, lines
    assert "Traceback" not in lines[0]
    return lines[0]


@pytest.fixture(scope="module")
def ok_server():
    s = FakeServer("ok")
    yield s
    s.stop()


@pytest.fixture
def loop(tmp_path) -> Path:
    """``loop1 -> loop2 -> loop1``: a link loop (the report's o/loop1)."""
    (tmp_path / "loop1").symlink_to(tmp_path / "loop2")
    (tmp_path / "loop2").symlink_to(tmp_path / "loop1")
    return tmp_path / "loop1"


@pytest.fixture
def small(tmp_path) -> str:
    return text_trace(tmp_path / "small.jsonl", "hello", everywhere=False)


# ------------------------------------------------------------------ data loss: caches never written through a link
def _probe(target, xdg, *extra):
    return spectui("probe", "--target", target, "-t", "1", "-c", "256", "--max-batch", "2", "--repeats", "1", *extra,
                   env={"XDG_CACHE_HOME": str(xdg)})


@pytest.mark.slow  # seconds of processes or large inputs: the full suite runs it, the fast lane does not
@pytest.mark.parametrize("case", ["L02", "L03"])
def test_L02_L03_a_symlinked_probe_cache_file_is_replaced_never_written_through(tiny_target, tmp_path, case):
    xdg = tmp_path / "xdg"
    r = _probe(tiny_target, xdg, "--json")
    assert r.returncode == 0, r.stderr
    cache = Path(json.loads(r.stdout.decode().splitlines()[-1])["cache_file"])
    victim = tmp_path / "elsewhere" / "victim.txt"
    victim.parent.mkdir()
    victim.write_text("IMPORTANT DATA not a cache\n")
    cache.unlink()
    cache.symlink_to(victim)
    r = _probe(tiny_target, xdg, *(["--refresh"] if case == "L03" else []))
    assert r.returncode == 0, r.stderr
    assert victim.read_text() == "IMPORTANT DATA not a cache\n"  # what the link named: untouched
    assert not cache.is_symlink() and json.loads(cache.read_text())["result"]["version"]  # the link replaced
    err = r.stderr.decode()
    assert f"was a symbolic link (to {victim})" in err and "what it named left alone" in err


@pytest.mark.slow  # seconds of processes or large inputs: the full suite runs it, the fast lane does not
def test_L01_a_symlinked_cache_directory_is_named_as_what_it_names(tiny_target, tmp_path):
    real = tmp_path / "disk" / "probe"
    real.mkdir(parents=True)
    (tmp_path / "xdg" / "spectui").mkdir(parents=True)
    (tmp_path / "xdg" / "spectui" / "probe").symlink_to(real)
    r = _probe(tiny_target, tmp_path / "xdg")
    assert r.returncode == 0, r.stderr
    line = next(ln for ln in r.stdout.decode().splitlines() if ln.startswith("cache: "))
    assert line.startswith(f"cache: {real}/") and len(list(real.glob("*.json"))) == 1


def test_a_record_dir_trace_that_is_a_link_is_refused(tiny_target, tmp_path):
    """Files spectui names itself: a --record-dir trace that is a link is refused before any run."""
    from spectui.contract.outputs import TRACE, OutputError, check_output

    victim = tmp_path / "victim.jsonl"
    text_trace(victim, "mine", everywhere=False)
    before = victim.read_bytes()
    link = tmp_path / "rec" / "run.jsonl"
    link.parent.mkdir()
    link.symlink_to(victim)
    with pytest.raises(OutputError, match="symbolic link .* never writes through a link"):
        check_output(link, TRACE, force=True, own_name=True)
    assert victim.read_bytes() == before


# ------------------------------------------------------------------ terminal injection: the "wrote" lines
@pytest.mark.slow  # seconds of processes or large inputs: the full suite runs it, the fast lane does not
def test_P03_the_wrote_line_escapes_a_path(tmp_path, small):
    src = tmp_path / "t_e\x1b]0;FNAME\x07\x1b[2J.jsonl"
    shutil.copy(small, src)
    out = tmp_path / "c\x1b]0;CNAME\x07.cast"
    r = spectui("cast", src, "-o", out, "--speed", "8")
    assert r.returncode == 0 and out.exists()
    line = one_line(r.stderr)
    assert line.startswith("wrote ") and "c\\x1b]0;CNAME\\x07.cast" in line
    assert not any(c in r.stderr.decode() for c in RAW)


@pytest.mark.slow  # seconds of processes or large inputs: the full suite runs it, the fast lane does not
def test_O10_a_newline_in_the_output_name_stays_on_one_line(tmp_path, small):
    (tmp_path / "d").mkdir()
    out = tmp_path / "d" / "x\ny\x1b]0;NL\x07.cast"
    r = spectui("cast", small, "-o", out, "--speed", "8")
    assert r.returncode == 0 and out.exists()
    assert "x\\ny\\x1b]0;NL\\x07.cast" in one_line(r.stderr)


# ------------------------------------------------------------------ hangs: one long token
@pytest.mark.parametrize("case, name, n", [
    ("X_one_long_token", "one_long_token", 100_000),
    ("E_tok_long10k_x", "tok_long10k", 10_000),
    ("E_tok_zw_x", "tok_zw", 10_000),
    ("E_tok_comb_x", "tok_comb", 10_000),
    ("E_tok_wide_x", "tok_wide", 3_600),
])
def test_E_replay_explain_of_a_long_token_ends(tmp_path, case, name, n, timed):
    """Past 60 s before (show() cut one character at a time and measured the rest each time)."""
    trace = text_trace(tmp_path / f"{name}.jsonl", long_texts(n)[name])
    rc, s, out, err = timed("replay", trace, "--explain", "1")
    assert rc == 0 and s < 30, (s, err)
    text = out.decode()
    assert text.startswith("pass 1:") and "target top (p)" in text
    assert not any(is_forbidden(c) for c in text)
    assert max(cells(ln) for ln in text.splitlines() if ln.startswith(("pass 1 ·", "*d", " d", "  "))) <= 100


@pytest.mark.slow  # seconds of processes or large inputs: the full suite runs it, the fast lane does not
def test_CA_insp_long10k_cast_inspect_of_a_long_token_ends(tmp_path):
    trace = text_trace(tmp_path / "tok_long10k.jsonl", long_texts(10_000)["tok_long10k"])
    out = tmp_path / "insp_long.cast"
    rc, s, _mb, _, err = peak("cast", trace, "-o", out, "--speed", "8", "--inspect", "1")
    assert rc == 0 and s < 60, (s, err)
    frames = "".join(json.loads(ln)[2] for ln in out.read_text().splitlines()[1:])
    assert "token inspector" in frames and "pass 1" in frames


@pytest.mark.slow
@pytest.mark.timing  # seconds and memory of whole processes: alone under pytest-xdist (tests/run_alone.py)
@pytest.mark.parametrize("name", ["one_long_token", "tok_zw", "tok_comb", "tok_wide"])
def test_a_1MB_token_through_every_face(tmp_path, name):
    """A 1,000,000-code-point token (within the 16 MiB line limit) through every face; each ends in seconds,
    its memory bounded (benchmarks/long_tokens.py prints the figures beside a short token's)."""
    trace = text_trace(tmp_path / f"{name}.jsonl", long_texts(1_000_000)[name], everywhere=False)
    out = tmp_path / "o.cast"
    for args in (["replay", trace, "--headless"], ["replay", trace, "--headless", "--json"],
                 ["replay", trace, "--explain", "1"], ["replay", trace, "--explain", "1", "--json"],
                 ["cast", trace, "-o", out, "--speed", "8", "--force"],
                 ["cast", trace, "-o", out, "--speed", "8", "--force", "--inspect", "1"]):
        rc, s, mb, stdout, err = peak(*args)
        assert rc == 0 and s < 30 and mb < 600, (args[1:], s, mb, err[-500:])
        if "--json" in args:
            json.loads(stdout)  # strict JSON, whole
    assert max(len(json.loads(ln)[2]) for ln in out.read_text().splitlines()[1:]) < 200_000  # no frame sends it all


# ------------------------------------------------------------------ hangs: signals whatever the outputs block on
def _stop_on_fifo(args: list[str], fifo: Path, after: float = 2.5) -> tuple[int, float, str]:
    os.mkfifo(fifo)
    env = dict(os.environ, PYTHONPATH=str(REPO))
    p = subprocess.Popen([sys.executable, "-m", "spectui", *map(str, args)], stdin=subprocess.DEVNULL,
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env)
    try:
        time.sleep(after)
        assert p.poll() is None, p.communicate()[1]  # blocked on the FIFO, as in the report
        t0 = time.monotonic()
        p.send_signal(signal.SIGTERM)
        _, err = p.communicate(timeout=10)
        return p.returncode, time.monotonic() - t0, err.decode()
    finally:
        if p.poll() is None:
            p.kill()
            p.communicate()


def test_O14_attach_record_onto_a_fifo_nobody_reads_ends_on_sigterm(tmp_path, ok_server):
    rc, s, err = _stop_on_fifo(["attach", ok_server.url, "--headless", "--count", "1", "--record",
                                tmp_path / "fifo_out"], tmp_path / "fifo_out")
    assert rc == 143 and s < 2.0, (rc, s, err)
    assert "nobody reads it, and SIGTERM asked to stop" in err and "Traceback" not in err


def test_O08_attach_record_onto_a_fifo_under_timeout(tmp_path, ok_server):
    """`timeout -k 5 30`: only the KILL ended it before; now the TERM does."""
    fifo = tmp_path / "fifo_out"
    os.mkfifo(fifo)
    env = dict(os.environ, PYTHONPATH=str(REPO))
    t0 = time.monotonic()
    r = subprocess.run(["timeout", "-k", "5", "3", sys.executable, "-m", "spectui", "attach", ok_server.url,
                        "--headless", "--count", "1", "--record", str(fifo)], capture_output=True, env=env, timeout=30)
    assert r.returncode == 124 and time.monotonic() - t0 < 5.5, r.stderr  # 124: the TERM ended it, not the KILL


def test_cast_onto_a_fifo_nobody_reads_ends_on_sigterm(tmp_path, small):
    rc, s, err = _stop_on_fifo(["cast", small, "-o", tmp_path / "fifo_out", "--speed", "8"], tmp_path / "fifo_out",
                               after=6.0)
    assert rc == 143 and s < 2.0 and "cast interrupted" in err, (rc, s, err)


def test_a_fifo_with_a_reader_gets_the_whole_trace(tmp_path, ok_server):
    import threading

    fifo = tmp_path / "fifo_ok"
    os.mkfifo(fifo)
    got: list[bytes] = []
    t = threading.Thread(target=lambda: got.append(fifo.read_bytes()))
    t.start()
    r = spectui("attach", ok_server.url, "--headless", "--count", "2", "--interval", "0.3", "--record", fifo)
    t.join(10)
    assert r.returncode == 0, r.stderr
    lines = got[0].decode().splitlines()
    assert json.loads(lines[0])["schema"] == "spectui.trace" and json.loads(lines[-1])["type"] == "attach_end"


# ------------------------------------------------------------------ tracebacks: a link loop as an output or input
def test_O02_cast_onto_a_link_loop(loop, small, cli):
    r = cli("cast", small, "-o", loop)
    assert r.returncode == 2 and "a loop of symbolic links" in one_line(r.stderr)


def test_O12_attach_record_onto_a_link_loop(loop, ok_server, cli):
    r = cli("attach", ok_server.url, "--headless", "--count", "1", "--record", loop)
    assert r.returncode == 2 and "a loop of symbolic links" in one_line(r.stderr)


def test_O13_bench_json_onto_a_link_loop(loop, ok_server, cli):
    before = ok_server.requests
    r = cli("bench", "--url", ok_server.url, "--limit", "1", "-n", "4", "--timeout", "5", "--json", "-o", loop)
    assert r.returncode == 2 and "a loop of symbolic links" in one_line(r.stderr)
    assert ok_server.requests == before  # before any request


def test_BP02_bench_prompts_from_a_link_loop(loop, ok_server, cli):
    r = cli("bench", "--url", ok_server.url, "--prompts", loop, "-n", "4", "--timeout", "5")
    line = one_line(r.stderr)
    assert r.returncode == 2 and "a loop of symbolic links" in line and "not found" not in line


def test_a_model_that_is_a_link_loop(loop, cli):
    r = cli("--target", loop, "--headless", "-p", "hi")
    assert r.returncode == 2 and "target file" in one_line(r.stderr) and "a loop of symbolic links" in r.stderr.decode()


# ------------------------------------------------------------------ tracebacks: a stdout that cannot encode UTF-8
NOT_UTF8 = {"LC_ALL": "C", "PYTHONUTF8": "0", "PYTHONCOERCECLOCALE": "0"}


@pytest.fixture(scope="module")
def wide_trace(tmp_path_factory) -> str:
    return text_trace(tmp_path_factory.mktemp("wide") / "tok_wide.jsonl", WIDE_TOKENS + ["\u202eRTL \u200f\u061c"],
                      n_passes=12)


@pytest.mark.parametrize("case, env, args", [
    ("V03", {"PYTHONIOENCODING": "ascii"}, ["--headless"]),
    ("V04", {"PYTHONIOENCODING": "latin-1"}, ["--headless"]),
    ("V05", NOT_UTF8, ["--headless", "--json"]),
])
def test_V03_V04_V05_replay_on_a_stream_that_cannot_encode(wide_trace, case, env, args):
    r = spectui("replay", wide_trace, *args, env=env)
    assert r.returncode == 0 and b"Traceback" not in r.stderr, r.stderr
    if env.get("PYTHONIOENCODING") != "latin-1":
        r.stdout.decode("ascii")  # escaped ASCII, every byte
    if "--json" in args:
        d = json.loads(r.stdout)  # still JSON, and the same text
        assert "👨\u200d👩\u200d👧\u200d👦" in d["text"]
    else:
        assert b"\\u4e2d\\u6587" in r.stdout  # 中文, escaped


@pytest.mark.parametrize("case, extra", [("V08", []), ("V09", ["--ascii"])])
def test_V08_V09_the_demo_on_a_c_locale(case, extra):
    r = spectui("demo", "--headless", "--speed", "max", "--act", "1", *extra, env=NOT_UTF8)
    assert r.returncode == 0 and b"Traceback" not in r.stderr, r.stderr
    out = r.stdout.decode("ascii")
    assert "Act 1" in out and "\\u2019" in out  # the narration's apostrophe, escaped


# ------------------------------------------------------------------ wrong exit status: every option at the option
def test_N16_seed_minus_one_is_refused_at_the_option_before_any_model_loads(tiny_target, cli):
    r = cli("--target", tiny_target, "--draft", tiny_target, "--headless", "-p", "hi", "-n", "16", "-t", "1",
            "--no-probe", "-s", "-1")
    err = r.stderr.decode()
    assert r.returncode == 2 and "Invalid value for '--seed' / '-s': -1 is not in the range x>=0" in err
    assert "loading" not in err and "Traceback" not in err


def test_N10_threads_zero_is_refused_at_the_option(tiny_target, cli):
    r = cli("--target", tiny_target, "--draft", tiny_target, "--headless", "-p", "hi", "-n", "16", "--no-probe",
            "-t", "0")
    assert r.returncode == 2 and b"Invalid value for '-t' / '--threads': 0 is not in the range 1<=x<=512" in r.stderr


def _commands():
    from spectui.cli import SUBCOMMANDS, main

    yield "spectui", main
    for name in sorted(SUBCOMMANDS):
        yield name, main.get_command(None, name)


def test_every_number_option_of_every_command_has_a_checked_type():
    """No option is a bare int or float (click's INT / FLOAT check nothing but the spelling)."""
    bare = [f"{name} {'/'.join(p.opts)}" for name, cmd in _commands() for p in cmd.params
            if isinstance(p, click.Option) and p.type in (click.INT, click.FLOAT)]
    assert not bare, bare


def _number_options():
    for name, cmd in _commands():
        for p in cmd.params:
            if isinstance(p, click.Option) and isinstance(p.type, (click.IntRange, click.FloatRange, GpuLayers, Speed)):
                yield pytest.param(name, cmd, p, id=f"{name} {p.opts[-1]}")


@pytest.mark.parametrize("name, cmd, opt", list(_number_options()))
def test_every_number_option_refuses_bad_values_at_the_option(name, cmd, opt):
    """Parsing alone (``make_context`` runs no command): nan, 1e400, a word, and the value just outside each
    bound are one usage error naming the option (an option without an upper bound takes any large value:
    ``-n 10**20`` is a run the context ends)."""
    t = opt.type
    bad = ["nan", "1e400", "abc"]
    if isinstance(t, (GpuLayers, Speed)):
        bad.append(str(10 ** 30))
    if isinstance(t, (click.IntRange, click.FloatRange)):
        step = 1 if isinstance(t, click.IntRange) else 0.5
        bad += [str(t.min - step)] if t.min is not None else []
        bad += [str(t.max + step)] if t.max is not None else []
    if isinstance(t, Speed):
        bad += ["0", str(SPEED_MAX * 2), "-1"]
    for value in bad:
        args = [opt.opts[0], value]
        if name == "attach":
            args = ["http://127.0.0.1:1", *args]
        with pytest.raises(click.BadParameter) as info:
            cmd.make_context(name, args)
        assert info.value.param is opt, (value, info.value.format_message())
        assert f"'{opt.opts[0]}'" in info.value.format_message(), info.value.format_message()


# ---------------------------------------------------------- bad input accepted: non-finite numbers however spelled
@pytest.fixture(scope="module")
def base_trace(tmp_path_factory) -> str:
    return text_trace(tmp_path_factory.mktemp("num") / "n_base.jsonl", "hi", everywhere=False, n_passes=10)


@pytest.mark.parametrize("case, field, raw, named", [
    ("S_huge_float_1e400", "timing.wall_ms", "1e400", "PassEvent.timing.wall_ms is 1e400, infinite as a float"),
    ("S_othcpu_1e400", "others_cpu", "1e400", "PassEvent.others_cpu is 1e400, infinite as a float"),
    ("S_neg_1e309", "timing.verify_ms", "-1E+309", "PassEvent.timing.verify_ms is -1E+309, infinite as a float"),
    ("S_int_400_digits", "timing.wall_ms", "1" * 400, "PassEvent.timing.wall_ms is a 400-digit integer"),
])
@pytest.mark.slow  # seconds of processes or large inputs: the full suite runs it, the fast lane does not
def test_S_1e400_gets_the_warning_nan_gets(tmp_path, base_trace, case, field, raw, named):
    t = with_pass_field(base_trace, tmp_path / f"{case}.jsonl", field, raw)
    for args in (["--headless"], ["--headless", "--json"]):
        r = spectui("replay", t, *args)
        err = r.stderr.decode()
        assert r.returncode == 0 and named in err and "read as 0" in err, err
        out = r.stdout.decode()
        assert "inf" not in out.replace("info", "") and "up to 0.0 cores" not in out
        if "--json" in args:
            d = json.loads(out)
            assert d["tokens_per_second"] > 0


@pytest.mark.slow  # seconds of processes or large inputs: the full suite runs it, the fast lane does not
@pytest.mark.parametrize("case, digits", [("S_huge_int_5000", 5000), ("S_huge_int_100k", 100_000)])
def test_S_huge_int_says_what_it_is(tmp_path, base_trace, case, digits):
    t = with_pass_field(base_trace, tmp_path / f"{case}.jsonl", "n_ctx_used", "1" * digits)
    r = spectui("replay", t, "--headless")
    line = one_line(r.stderr)
    assert r.returncode == 2 and f"line 5: a {digits:,}-digit integer (Python reads at most 4,300 digits" in line
    assert "not JSON" not in line


# ------------------------------------------------------------------ misleading: redirects, a body cut short
@pytest.mark.slow  # seconds of processes or large inputs: the full suite runs it, the fast lane does not
def test_AT19106_attach_says_where_a_redirect_to_another_host_pointed():
    srv = FakeServer("redirect_away")
    try:
        r = spectui("attach", srv.url, "--headless", "--count", "3", "--interval", "0.3", "--timeout", "3")
        out = r.stdout.decode()
        port = srv.url.rsplit(":", 1)[1]
        assert f"redirected to http://127.0.0.2:{port}/metrics (another origin than {srv.url}/metrics): not " \
               "followed" in out
        assert f"redirected to http://***@127.0.0.1:{port}/metrics (with a user name or password in it)" in out
        assert "redirected to http://elsewhere.invalid/metrics" in out and "user:pw" not in out
        assert "cannot resolve host" not in out and "connection refused" not in out and r.returncode == 1
    finally:
        srv.stop()


@pytest.mark.slow  # seconds of processes or large inputs: the full suite runs it, the fast lane does not
def test_BU19106_bench_is_not_redirected_to_another_host():
    srv = FakeServer("redirect_away")
    try:
        r = spectui("bench", "--url", srv.url, "--limit", "1", "-n", "4", "--timeout", "5")
        line = one_line(r.stderr)
        # a server that does not answer bench's request fails it as it fails attach (above): 1, not bad usage
        assert r.returncode == 1 and "redirected to" in line and "not followed" in line
        assert line.startswith(f"spectui: bench: {srv.url} never answered: HTTP 302: redirected to")
        assert "connection refused" not in line and srv.posts == 0
    finally:
        srv.stop()


def test_AT19108_a_body_cut_short_of_its_content_length_is_an_error_saying_so(cli):
    srv = FakeServer("short_body")
    try:
        r = cli("attach", srv.url, "--headless", "--count", "2", "--interval", "0.3", "--timeout", "3")
        out = r.stdout.decode()
        assert "(Content-Length): cut short, not read" in out and "Invalid value" not in out, out
        assert "not Prometheus" not in out and r.returncode == 1
    finally:
        srv.stop()


# ---------------------------------------------------------- misleading: the TUI's layout for ZWJ emoji and flags
@pytest.mark.slow
def test_TUI_tok_wide_keeps_its_layout_in_tmux(tmp_path, pane_factory):
    """tmux 100x30: the replay of ZWJ families, flags, skin tones and tag sequences draws the same panels, row
    for row below the text, as the same run with ASCII tokens (the text spilled over them before)."""
    from tmux_pane import spectui_cmd

    if shutil.which("tmux") is None:
        pytest.skip("tmux is not installed")
    wide = text_trace(tmp_path / "wide.jsonl", WIDE_TOKENS, n_passes=40)
    plain = text_trace(tmp_path / "plain.jsonl", ["ab"] * len(WIDE_TOKENS), n_passes=40)
    screens = []
    for trace in (wide, plain):
        pane = pane_factory(spectui_cmd(f"replay {trace} --speed 8"), cols=100, rows=30)
        pane.wait_for("ENDED", timeout=90)
        screens.append(pane.settled().splitlines())
    w, p = screens
    legend = next(i for i, ln in enumerate(p) if ln.startswith("accepted ✓ rejected ✗"))
    assert w[legend] == p[legend] and w[:2] == p[:2]
    stats = next(i for i, ln in enumerate(p) if ln.startswith("acceptance by draft position"))
    assert w[stats:] == p[stats:]
    assert "\\u200d" in "\n".join(w[2:legend])  # the joiner shown as what it is


# ------------------------------------------------------------------ the report's notes
def test_note_bidi_marks_zero_width_and_tag_characters_are_escaped():
    for ch in "\u200e\u200f\u061c\u200b\u2060\u2061\ufeff\u180e\ufff9\U000e0041\U000e007f\u3164":
        assert is_forbidden(ch) and visible(ch) != ch and visible_line(ch) != ch, hex(ord(ch))
        assert json.loads(json_text(ch)) == ch and json_text(ch).isascii()
    assert visible("a\u200cb\u200db") == "a\u200cb\u200db"  # ZWNJ and ZWJ kept where nothing is laid out
    assert visible_cells("👨\u200d👩") == "👨\\u200d👩" and visible_cells("❤\ufe0f") == "❤\\ufe0f"
    assert cut("A" * 1_000_000, 14) == "A" * 13 + "…" and cut("e" + "\u0301" * 10_000, 14).endswith("…")


def test_note_help_shows_the_temperature_range(cli):
    r = cli("--help")
    out = r.stdout.decode()
    assert "x<=None" not in out and "0.0<=x<=2.0" in out


@pytest.mark.slow  # seconds of processes or large inputs: the full suite runs it, the fast lane does not
def test_note_a_trace_being_written_is_not_called_killed(tmp_path, small):
    growing = tmp_path / "growing.jsonl"
    data = Path(small).read_bytes()
    growing.write_bytes(data[: data.rindex(b"\n", 0, len(data) - 1) + 20])  # half a line at the end, just now
    r = spectui("replay", growing, "--headless")
    err = r.stderr.decode()
    assert r.returncode == 0 and "a run may still be writing it" in err and "probably killed" not in err
    old = time.time() - 3600
    os.utime(growing, (old, old))
    assert "the run was probably killed" in spectui("replay", growing, "--headless").stderr.decode()
