"""No output ever destroys a file (spectui.contract.outputs): every writing command against every input it reads,
a foreign file refused without --force, a file of its own kind replaced (atomically where the format
allows), kill -9 mid-trace still readable, a failing start leaves no file. Real llama.cpp on the tiny models,
real files the tests write; no mocks."""

from __future__ import annotations

import itertools
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from click.testing import CliRunner

from spectui.cli import main
from spectui.contract import outputs
from spectui.contract.outputs import CAST, TRACE, OutputError, atomic_write, check_output, csv_report, json_report
from spectui.recording.trace import TraceWriter, read_trace, synthetic_run, write_trace

REPO = Path(__file__).resolve().parents[2]
FOREIGN = b"precious data that is not spectui's\n" * 100


def _cli(args) -> "CliRunner.Result":
    return CliRunner().invoke(main, [str(a) for a in args])


def _sub(*args) -> list[str]:
    return [str(a) for a in args]


# ------------------------------------------------------------------ the module itself


def test_check_output_refuses_an_input_by_path_symlink_and_hard_link(tmp_path):
    model = tmp_path / "model.gguf"
    model.write_bytes(FOREIGN)
    link = tmp_path / "link.jsonl"
    link.symlink_to(model)
    hard = tmp_path / "hard.jsonl"
    os.link(model, hard)
    for path in (model, link, hard, tmp_path / "." / "model.gguf"):
        with pytest.raises(OutputError, match="refusing to write the trace to .*input"):
            check_output(path, TRACE, inputs=[model])
    assert model.read_bytes() == FOREIGN


def test_check_output_foreign_own_empty_force(tmp_path):
    foreign = tmp_path / "keep.jsonl"
    foreign.write_bytes(FOREIGN)
    with pytest.raises(OutputError, match=r"refusing to replace .*keep.jsonl: it exists and is not a spectui trace "
                                          r"\(use --force"):
        check_output(foreign, TRACE)
    assert check_output(foreign, TRACE, force=True).path == str(foreign)
    own = tmp_path / "own.jsonl"
    write_trace(own, list(synthetic_run(2)))
    check_output(own, TRACE)  # a trace: may be replaced by a trace
    with pytest.raises(OutputError, match="not a spectui cast"):
        check_output(own, CAST)  # ... but not by a cast
    gz = tmp_path / "own.jsonl.gz"
    write_trace(gz, list(synthetic_run(2)))
    check_output(gz, TRACE)  # recognised through gzip
    empty = tmp_path / "empty.cast"
    empty.write_bytes(b"")
    check_output(empty, CAST)  # an empty file holds nothing to lose
    with pytest.raises(OutputError, match="is a directory"):
        check_output(tmp_path, TRACE)
    with pytest.raises(OutputError, match="does not exist"):
        check_output(tmp_path / "no" / "x.jsonl", TRACE)
    with pytest.raises(OutputError, match="empty"):
        check_output("", TRACE)


def test_report_kinds_are_recognised_by_their_markers(tmp_path):
    kind = json_report("bench")
    p = tmp_path / "r.json"
    p.write_text(json.dumps({"schema": "spectui.bench", "x": 1}, indent=2))
    check_output(p, kind)
    p.write_text(json.dumps({"x": 1, "schema": "spectui.bench"}))
    with pytest.raises(OutputError):
        check_output(p, kind)
    csvk = csv_report("sweep", ["a", "b"])
    c = tmp_path / "r.csv"
    c.write_text("a,b\n1,2\n")
    check_output(c, csvk)
    c.write_text("a,b,c\n1,2,3\n")
    with pytest.raises(OutputError):
        check_output(c, csvk)
    md = outputs.text_report("bench", "<!-- spectui bench report -->")
    m = tmp_path / "r.md"
    m.write_text("<!-- spectui bench report -->\n# x\n")
    check_output(m, md)
    m.write_text("# my notes\n")
    with pytest.raises(OutputError):
        check_output(m, md)


def test_atomic_write_replaces_only_on_success(tmp_path):
    p = tmp_path / "x.cast"
    p.write_text('{"version": 2, "width": 80, "height": 24}\n[0.0, "o", "old"]\n')
    old = p.read_text()
    with pytest.raises(RuntimeError):
        with atomic_write(p, CAST) as fh:
            fh.write('{"version": 2, "width": 1, "height": 1}\n')
            raise RuntimeError("the render failed half way")
    assert p.read_text() == old  # untouched
    assert [f.name for f in tmp_path.iterdir()] == ["x.cast"]  # no temporary left behind
    with atomic_write(p, CAST) as fh:
        fh.write('{"version": 2, "width": 1, "height": 1}\n')
    assert p.read_text() == '{"version": 2, "width": 1, "height": 1}\n'
    assert oct(p.stat().st_mode & 0o777) != oct(0o600)  # a normal file's mode, not mkstemp's


def test_a_device_is_written_in_place_never_replaced(tmp_path):
    check_output("/dev/null", TRACE)  # not a regular file: nothing to recognise, nothing renamed onto it
    with atomic_write("/dev/null", CAST) as fh:
        fh.write("x")
    assert os.path.exists("/dev/null") and not os.path.isfile("/dev/null")


# ------------------------------------------------------------------ the trace writer


def test_trace_writer_opens_at_the_first_event_and_a_failing_start_leaves_no_file(tmp_path):
    p = tmp_path / "t.jsonl"
    w = TraceWriter(p)
    assert not p.exists() and not w.opened
    w.close()
    assert not p.exists()  # no event, no file
    assert list(tmp_path.iterdir()) == []


def test_an_older_trace_stays_whole_until_the_new_one_has_its_first_event(tmp_path):
    p = tmp_path / "t.jsonl"
    evs = list(synthetic_run(3))
    write_trace(p, evs)
    old = p.read_bytes()
    w = TraceWriter(p)
    assert p.read_bytes() == old
    w.write(evs[0])
    assert read_trace(p).events == evs[:1]
    w.close()
    assert [f.name for f in tmp_path.iterdir()] == ["t.jsonl"]


def test_trace_writer_refuses_the_model_files_it_learns_from_the_start_event(tmp_path):
    evs = list(synthetic_run(2))
    model = tmp_path / "synthetic-target.gguf"  # the start event's target path, relative: run from tmp_path
    model.write_bytes(FOREIGN)
    cwd = os.getcwd()
    os.chdir(tmp_path)
    try:
        w = TraceWriter("synthetic-target.gguf", force=True)  # even --force never writes over an input
        from spectui.recording.trace import TraceError

        with pytest.raises(TraceError, match="input"):
            w.write(evs[0])
        w.close()
    finally:
        os.chdir(cwd)
    assert model.read_bytes() == FOREIGN


def test_save_to_never_writes_over_its_own_recording_or_a_foreign_file(tmp_path):
    from spectui.recording.trace import TraceError

    rec = tmp_path / "rec.jsonl"
    w = TraceWriter(rec)
    for ev in list(synthetic_run(3))[:4]:
        w.write(ev)
    with pytest.raises(TraceError, match="input"):
        w.save_to(rec)
    foreign = tmp_path / "notes.jsonl"
    foreign.write_bytes(FOREIGN)
    with pytest.raises(TraceError, match="not a spectui trace"):
        w.save_to(foreign)
    assert foreign.read_bytes() == FOREIGN
    assert w.save_to(foreign, force=True) == 4
    w.close()


_KILL = """
import sys, time
from spectui.recording.trace import TraceWriter, synthetic_run
w = TraceWriter(sys.argv[1])
for i, ev in enumerate(synthetic_run(100000, seed=3)):
    w.write(ev)
    if i == 30:
        print("ready", flush=True)
    if i > 30:
        time.sleep(0.0005)
"""


def test_kill_9_mid_trace_replacing_an_older_trace_leaves_the_new_one_readable(tmp_path):
    p = tmp_path / "t.jsonl"
    write_trace(p, list(synthetic_run(2, seed=9)))
    proc = subprocess.Popen([sys.executable, "-c", _KILL, str(p)], stdout=subprocess.PIPE, cwd=REPO,
                            env={**os.environ, "PYTHONPATH": str(REPO)})
    assert proc.stdout.readline().strip() == b"ready"
    time.sleep(0.2)
    proc.send_signal(signal.SIGKILL)
    proc.wait()
    tr = read_trace(p, on_warning=lambda m: None)
    assert len(tr.events) > 31
    assert tr.events == list(itertools.islice(synthetic_run(100000, seed=3), len(tr.events)))  # its first events
    assert [f.name for f in tmp_path.iterdir()] == ["t.jsonl"]


# ------------------------------------------------------------------ every writing command x every input


@pytest.fixture
def inputs(tmp_path, tiny_target, tiny_draft_noisy):
    """Copies of the models and a prompt file (the tests write over nothing of the session's)."""
    target = tmp_path / "target.gguf"
    draft = tmp_path / "draft.gguf"
    target.write_bytes(tiny_target.read_bytes())
    draft.write_bytes(tiny_draft_noisy.read_bytes())
    prompt = tmp_path / "prompt.txt"
    prompt.write_text("the cat sat on the mat")
    trace = tmp_path / "run.jsonl"
    write_trace(trace, list(synthetic_run(6)))
    return {"target": target, "draft": draft, "prompt": prompt, "trace": trace}


def _digest(paths) -> dict:
    return {str(p): p.read_bytes() for p in paths}


RUN_INPUTS = ["target", "draft", "prompt"]


@pytest.mark.parametrize("which", RUN_INPUTS)
@pytest.mark.parametrize("how", ["same", "symlink", "hardlink"])
def test_run_record_never_writes_over_an_input(inputs, tmp_path, which, how):
    victim = inputs[which]
    path = victim
    if how == "symlink":
        path = tmp_path / "alias.jsonl"
        path.symlink_to(victim)
    elif how == "hardlink":
        path = tmp_path / "alias.jsonl"
        os.link(victim, path)
    before = _digest(inputs.values())
    res = _cli(["-m", inputs["target"], "-md", inputs["draft"], "-f", inputs["prompt"], "--headless", "-n", 4,
                "-t", 1, "--no-probe", "--record", path, "--force"])  # not even --force
    assert res.exit_code == 2, res.output + res.stderr
    assert res.stderr.startswith("spectui: error: refusing to write the trace to") and "input" in res.stderr
    assert len(res.stderr.strip().splitlines()) == 1
    assert _digest(inputs.values()) == before


def test_run_record_refuses_a_foreign_file_before_loading_and_force_replaces_it(inputs, tmp_path):
    keep = tmp_path / "keep.jsonl"
    keep.write_bytes(FOREIGN)
    res = _cli(["-m", inputs["target"], "--drafter", "ngram", "--headless", "-p", "hi", "-n", 4, "-t", 1,
                "--record", keep])
    assert res.exit_code == 2 and "refusing to replace" in res.stderr and "--force" in res.stderr
    assert keep.read_bytes() == FOREIGN
    res = _cli(["-m", inputs["target"], "--drafter", "ngram", "--headless", "-p", "hi", "-n", 4, "-t", 1,
                "--no-probe", "--record", keep, "--force"])
    assert res.exit_code == 0, res.stderr
    assert read_trace(keep).events[-1].type == "end"
    # now it is a trace: the next run replaces it without --force
    res = _cli(["-m", inputs["target"], "--drafter", "ngram", "--headless", "-p", "hi", "-n", 3, "-t", 1,
                "--no-probe", "--record", keep])
    assert res.exit_code == 0, res.stderr
    assert read_trace(keep).header["params"]["n_predict"] == 3


def test_run_that_fails_to_start_leaves_no_trace_and_keeps_the_old_one(tmp_path, inputs):
    rec = tmp_path / "new.jsonl"
    res = _cli(["-m", tmp_path / "missing.gguf", "--drafter", "ngram", "--headless", "-p", "hi",
                "--record", rec])
    assert res.exit_code == 2 and not rec.exists()
    old = tmp_path / "old.jsonl"
    write_trace(old, list(synthetic_run(3)))
    before = old.read_bytes()
    res = _cli(["-m", tmp_path / "missing.gguf", "-md", inputs["draft"], "--headless", "-p", "hi", "--record", old])
    assert res.exit_code == 2 and old.read_bytes() == before  # the keep.jsonl, no longer 0 bytes
    assert sorted(f.name for f in tmp_path.iterdir() if f.suffix == ".jsonl") == ["old.jsonl", "run.jsonl"]


@pytest.mark.parametrize("which", RUN_INPUTS)
@pytest.mark.parametrize("flag", ["--json", "--csv"])
def test_sweep_output_never_writes_over_an_input(inputs, which, flag):
    before = _digest(inputs.values())
    res = CliRunner().invoke(__import__("spectui.commands.sweep", fromlist=["sweep_cmd"]).sweep_cmd, _sub(
        "-m", inputs["target"], "-md", inputs["draft"], "-f", inputs["prompt"], "-k", "1", "--temp", "0", "-n", 4,
        "-t", 1, flag, "-o", inputs[which], "--force"))
    assert res.exit_code == 2 and "input" in res.stderr, res.stderr
    assert _digest(inputs.values()) == before


@pytest.mark.parametrize("which", RUN_INPUTS)
def test_sweep_record_dir_never_writes_over_an_input(inputs, tmp_path, which):
    """The prompt file (or a model) placed where a run's trace would go, under that trace's name."""
    from spectui.commands.sweep import sweep_cmd

    rec = tmp_path / "rec"
    rec.mkdir()
    name = rec / "001-base-t0-r1.jsonl"
    os.link(inputs[which], name)
    before = _digest(inputs.values())
    res = CliRunner().invoke(sweep_cmd, _sub("-m", inputs["target"], "-md", inputs["draft"], "-f", inputs["prompt"],
                                             "-k", "1", "--temp", "0", "-n", 4, "-t", 1, "--record-dir", rec,
                                             "--force"))
    assert res.exit_code == 2 and "input" in res.stderr, res.stderr
    assert _digest(inputs.values()) == before


def test_sweep_outputs_foreign_refused_own_replaced_atomically(inputs, tmp_path):
    from spectui.commands.sweep import sweep_cmd

    args = ["-m", inputs["target"], "--drafter", "ngram", "-k", "2", "--temp", "0", "-n", 6, "-t", 1, "-p", "a b a b"]
    out = tmp_path / "sweep.json"
    out.write_bytes(FOREIGN)
    res = CliRunner().invoke(sweep_cmd, _sub(*args, "--json", "-o", out))
    assert res.exit_code == 2 and "refusing to replace" in res.stderr and out.read_bytes() == FOREIGN
    res = CliRunner().invoke(sweep_cmd, _sub(*args, "--json", "-o", out, "--force"))
    assert res.exit_code == 0, res.stderr
    data = json.loads(out.read_text())
    assert next(iter(data)) == "schema" and data["schema"] == "spectui.sweep" and len(data["runs"]) == 2
    assert res.stdout == ""
    res = CliRunner().invoke(sweep_cmd, _sub(*args, "--json", "-o", out))  # its own kind: replaced
    assert res.exit_code == 0, res.stderr
    csv_out = tmp_path / "sweep.csv"
    res = CliRunner().invoke(sweep_cmd, _sub(*args, "--csv", "-o", csv_out))
    assert res.exit_code == 0 and csv_out.read_text().startswith("repeat,temperature,k,")
    res = CliRunner().invoke(sweep_cmd, _sub(*args, "--csv", "-o", out))  # a JSON report is not a CSV
    assert res.exit_code == 2 and "not a spectui sweep CSV" in res.stderr
    res = CliRunner().invoke(sweep_cmd, _sub(*args, "-o", tmp_path / "table.txt"))
    assert res.exit_code == 2 and "--json or --csv" in res.stderr
    # --record-dir: a foreign file under a run's trace name is refused before the first run
    rec = tmp_path / "rec"
    rec.mkdir()
    (rec / "002-k2-t0-r1.jsonl").write_bytes(FOREIGN)
    res = CliRunner().invoke(sweep_cmd, _sub(*args, "--record-dir", rec))
    assert res.exit_code == 2 and "refusing to replace" in res.stderr
    assert sorted(f.name for f in rec.iterdir()) == ["002-k2-t0-r1.jsonl"]  # nothing ran, nothing written
    res = CliRunner().invoke(sweep_cmd, _sub(*args, "--record-dir", rec, "--force"))
    assert res.exit_code == 0, res.stderr
    assert read_trace(rec / "002-k2-t0-r1.jsonl").events[-1].type == "end"


@pytest.mark.slow  # seconds of processes or large inputs: the full suite runs it, the fast lane does not
def test_cast_output_never_the_trace_and_foreign_refused(inputs, tmp_path):
    from spectui.commands.cast import cast_cmd

    trace = inputs["trace"]
    before = trace.read_bytes()
    for path in (trace, tmp_path / "alias.cast"):
        if path != trace:
            os.link(trace, path)
        res = CliRunner().invoke(cast_cmd, _sub(trace, "-o", path, "--force"))
        assert res.exit_code == 2 and "input" in res.stderr, res.stderr
    assert trace.read_bytes() == before
    out = tmp_path / "notes.cast"
    out.write_bytes(FOREIGN)
    res = CliRunner().invoke(cast_cmd, _sub(trace, "-o", out, "--cols", 80, "--rows", 24, "--speed", 8))
    assert res.exit_code == 2 and "not a spectui cast" in res.stderr and out.read_bytes() == FOREIGN
    res = CliRunner().invoke(cast_cmd, _sub(trace, "-o", out, "--cols", 80, "--rows", 24, "--speed", 8, "--force"))
    assert res.exit_code == 0, res.stderr
    first = out.read_text().splitlines()[0]
    assert json.loads(first)["version"] == 2
    res = CliRunner().invoke(cast_cmd, _sub(trace, "-o", out, "--cols", 80, "--rows", 24, "--speed", 8))
    assert res.exit_code == 0, res.stderr  # its own kind: replaced
    assert sorted(f.name for f in tmp_path.iterdir() if "cast" in f.name) == ["alias.cast", "notes.cast"]


def test_cast_that_fails_leaves_the_old_cast_and_no_temporary(inputs, tmp_path):
    from spectui.commands.cast import cast_cmd

    out = tmp_path / "x.cast"
    out.write_text('{"version": 2, "width": 80, "height": 24}\n')
    before = out.read_bytes()
    bad = tmp_path / "bad.jsonl"
    bad.write_text("not a trace\n")
    res = CliRunner().invoke(cast_cmd, _sub(bad, "-o", out))
    assert res.exit_code == 2 and out.read_bytes() == before
    assert not [f for f in tmp_path.iterdir() if f.name.endswith(".part")]


def test_attach_record_foreign_refused_own_replaced(tmp_path):
    pytest.importorskip("prometheus_client")
    from servers import StaticServer

    from spectui.commands.attach import attach_cmd

    body = ("# TYPE llamacpp:spec_decode_num_drafts_total counter\nllamacpp:spec_decode_num_drafts_total 0\n")
    server = StaticServer(body, "text/plain; version=0.0.4")
    try:
        rec = tmp_path / "a.jsonl"
        rec.write_bytes(FOREIGN)
        args = [server.url, "--interval", "0.1", "--count", "1", "--headless", "--record", str(rec)]
        res = CliRunner().invoke(attach_cmd, args)
        assert res.exit_code == 2 and "refusing to replace" in res.stderr and rec.read_bytes() == FOREIGN
        res = CliRunner().invoke(attach_cmd, [*args, "--force"])
        assert res.exit_code == 0, res.stderr
        assert read_trace(rec).events[0].type == "attach_start"
        res = CliRunner().invoke(attach_cmd, args)  # now a trace: replaced
        assert res.exit_code == 0, res.stderr
        bad = tmp_path / "b.jsonl"
        res = CliRunner().invoke(attach_cmd, ["htp:/bad url", "--count", "1", "--headless", "--record", str(bad)])
        assert res.exit_code == 2 and not bad.exists()  # a bad URL: no trace file
    finally:
        server.stop()


def test_probe_cache_never_written_over_a_model(tmp_path, make_engine, inputs):
    """A cache entry that is a link to the model file: the probe warns and leaves the model alone."""
    from spectui.analysis.measured import machine, probe

    engine = make_engine(inputs["target"])
    key, digest = machine.cache_key(engine, max_batch=2)
    d = tmp_path / "cache"
    d.mkdir()
    machine.cache_path(digest, d).symlink_to(inputs["target"])
    before = inputs["target"].read_bytes()
    warned = []
    import contextlib
    import io

    err = io.StringIO()
    with contextlib.redirect_stderr(err):
        res = probe.cached_or_measure(engine, max_batch=2, repeats=1, directory=d, warn=warned.append,
                                      refresh=True)
    assert inputs["target"].read_bytes() == before  # the model the link named: never written
    link = machine.cache_path(digest, d)
    assert not link.is_symlink() and res.cache_file == str(link)  # the link itself replaced by the cache
    assert f"was a symbolic link (to {inputs['target']}): replaced by this measurement" in err.getvalue()
    # a normal cache file: written atomically, replaced by the next measurement
    os.unlink(machine.cache_path(digest, d))
    res = probe.cached_or_measure(engine, max_batch=2, repeats=1, directory=d, refresh=True)
    assert res.cache_file and json.loads(Path(res.cache_file).read_text())["key"] == key
    res = probe.cached_or_measure(engine, max_batch=2, repeats=1, directory=d, refresh=True)
    assert [f.name for f in d.iterdir()] == [f"{digest}.json"]


async def test_tui_save_never_overwrites_and_goes_through_outputs(tmp_path):
    from spectui.recording.player import ReplayPlayer
    from spectui.recording.synthetic import sample_events
    from spectui.tui.run.app import (
        SpectuiApp,
        run_replay,  # noqa: F401 - the app module
    )

    app = SpectuiApp(None, replay=ReplayPlayer(sample_events(), speed=float("inf")), save_dir=tmp_path)
    async with app.run_test(size=(120, 36)) as pilot:
        await pilot.pause(0.3)
        await pilot.press("s")
        await pilot.pause(0.2)
        await pilot.press("s")
        await pilot.pause(0.2)
    assert len(app.saved_paths) == 2 and app.saved_paths[0] != app.saved_paths[1]
    for p in app.saved_paths:
        assert read_trace(p).header["schema"] == "spectui.trace"
