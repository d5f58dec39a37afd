"""What drafted, recorded and shown: ``RunStarted.head`` (the head's file, EAGLE-3's target layers, the number
of MTP heads), ``PassEvent.draft_heads`` (which head drafted each draft; empty for a draft model or ngram), the
trace (header and events), replay --headless / --json / --explain and the TUI's status line and inspector;
old traces read with the defaults."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from in_process import spectui_in_process
from test_spec_models import shared_spec

from spectui.contract.control import RunControl
from spectui.contract.events import HeadInfo, PassEvent, RunStarted, Settings
from spectui.engine.loop import Engine
from spectui.views.heads import drafted_by, head_label, pass_heads, step_cost

ROOT = Path(__file__).resolve().parents[2]
PROMPT = "the hash map"


@pytest.fixture(scope="module")
def spec_dir(tiny_dir) -> Path:
    return shared_spec(tiny_dir, "--eagle3-agree", "0.5", "--mtp-agree", "0.5", "--mtp-heads", "2")


def _spectui(*args: str, timeout: int = 300) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "spectui", *args], capture_output=True, text=True, timeout=timeout)


def test_run_started_names_the_head_and_passes_the_head_of_each_draft(spec_dir):
    """EAGLE-3: the head file and its three target layers; a single MTP head: 1 head, repeated (every draft
    head 0). A pass drafted by ngram mid-run records no heads."""
    cases = [("eagle3", str(spec_dir / "eagle3-agree-target.gguf"), str(spec_dir / "eagle3-agree-draft.gguf")),
             ("mtp", str(spec_dir / "mtp-agree-target.gguf"), None)]
    for kind, target, draft in cases:
        with Engine(target, draft, n_ctx=256, threads=1, head=kind, warn=lambda m: None) as e:
            control = RunControl(Settings(draft_max=3, drafter=kind))
            evs = []
            for ev in e.run(PROMPT, control, 24):
                evs.append(ev)
                if isinstance(ev, PassEvent) and ev.index == 4:
                    control.update(drafter="ngram")
        start = evs[0]
        assert isinstance(start, RunStarted) and start.draft is None
        want = HeadInfo(kind="eagle3", path=draft, target_layers=(1, 2, 3)) if kind == "eagle3" else \
            HeadInfo(kind="mtp", path=target, n_heads=1, chained=False)
        assert start.head == want
        passes = [ev for ev in evs if isinstance(ev, PassEvent) and not ev.prefill]
        by_head = [ev for ev in passes if ev.settings.drafter == kind and ev.drafts]
        assert by_head and all(ev.draft_heads == (0,) * len(ev.drafts) for ev in by_head)
        others = [ev for ev in passes if ev.settings.drafter != kind]
        assert others and all(ev.draft_heads == () for ev in others)


@pytest.mark.slow  # a CLI process; test_eagle3_summary_names_the_head_file_and_its_layers_in_process
def test_eagle3_summary_names_the_head_file_and_its_layers(spec_dir):
    target, head = str(spec_dir / "eagle3-agree-target.gguf"), str(spec_dir / "eagle3-agree-draft.gguf")
    r = _spectui("--target", target, "--draft", head, "--headless", "-n", "16", "-p", PROMPT, "--no-probe")
    assert r.returncode == 0, r.stderr
    _says_the_head_file_and_its_layers(r.stdout, head)


def test_eagle3_summary_names_the_head_file_and_its_layers_in_process(spec_dir):
    """The same command and the same lines, run by click's CliRunner in this process."""
    target, head = str(spec_dir / "eagle3-agree-target.gguf"), str(spec_dir / "eagle3-agree-draft.gguf")
    r = spectui_in_process("--target", target, "--draft", head, "--headless", "-n", "16", "-p", PROMPT, "--no-probe")
    assert r.returncode == 0, r.stderr
    _says_the_head_file_and_its_layers(r.stdout, head)


def _says_the_head_file_and_its_layers(stdout: str, head: str) -> None:
    assert ("drafter                eagle3 (an EAGLE-3 head on the target's hidden states: EAGLE-3 head, features "
            "from target layers 1, 2, 3)") in stdout
    assert f"head file              {head}" in stdout
    assert "draft step cost        EAGLE-3 head " in stdout


def test_a_draft_model_run_records_no_head(spec_dir):
    t = str(spec_dir / "eagle3-target.gguf")
    with Engine(t, t, n_ctx=256, threads=1, warn=lambda m: None) as e:
        evs = list(e.run(PROMPT, RunControl(Settings(draft_max=2, drafter="model")), 8))
    assert evs[0].head is None
    assert all(ev.draft_heads == () for ev in evs if isinstance(ev, PassEvent))
    assert any(ev.drafts for ev in evs if isinstance(ev, PassEvent))


@pytest.mark.slow  # a recorded CLI run, its replay, --json and --explain
def test_trace_replay_json_and_explain_say_which_head_drafted(spec_dir, tmp_path):
    target = str(spec_dir / "mtp-chain-agree-target.gguf")
    trace = tmp_path / "chain.trace"
    r = _spectui("--target", target, "--drafter", "mtp", "-k", "3", "--headless", "-n", "24", "-p", PROMPT,
                 "--no-probe", "--record", str(trace))
    assert r.returncode == 0, r.stderr
    words = "drafter                mtp (the target's own MTP layers: 2 chained MTP heads"
    for out in (r.stdout, _spectui("replay", str(trace), "--headless").stdout):
        assert words in out
        assert f"head file              {target}" in out
        assert "draft step cost        MTP head " in out and " ms per draft step · target decode " in out
    import gzip

    raw = trace.read_bytes()
    lines = (gzip.decompress(raw) if raw[:2] == b"\x1f\x8b" else raw).decode().splitlines()
    header = json.loads(lines[0])
    assert header["models"]["head"] == {"kind": "mtp", "path": target, "n_heads": 2, "chained": True,
                                        "target_layers": []}
    js = json.loads(_spectui("replay", str(trace), "--json").stdout)
    assert js["start"]["head"]["n_heads"] == 2
    heads = [p["draft_heads"] for p in js["passes"] if p["drafts"]]
    assert heads and all(h == list(range(len(h))) for h in heads) and [0, 1] in heads
    ex = _spectui("replay", str(trace), "--explain", "1")
    assert ex.returncode == 0, ex.stderr
    assert "drafts by MTP heads 1, 2 of 2" in ex.stdout and " ms per draft step" in ex.stdout
    assert "drafted by MTP head 1/2" in ex.stdout and "drafted by MTP head 2/2" in ex.stdout
    exj = json.loads(_spectui("replay", str(trace), "--explain", "1:2", "--json").stdout)
    assert "drafted by MTP head 2/2" in exj["explain"][0]["notes"]


def test_old_traces_read_with_the_defaults():
    from spectui.recording.trace import iter_trace

    for path in sorted((ROOT / "tests" / "data").glob("trace-*.jsonl.gz")):
        _header, reader = iter_trace(path)
        try:
            evs = list(reader)
        finally:
            reader.close()
        assert [ev.head for ev in evs if isinstance(ev, RunStarted)] == [None]
        passes = [ev for ev in evs if isinstance(ev, PassEvent)]
        assert passes and all(ev.draft_heads == () for ev in passes)


def test_the_words_for_each_kind():
    chain = HeadInfo(kind="mtp", path="m.gguf", n_heads=3, chained=True)
    single = HeadInfo(kind="mtp", path="m.gguf")
    eagle = HeadInfo(kind="eagle3", path="e.gguf", target_layers=(1, 2, 3))
    assert head_label("mtp", 1, chain) == "MTP head 2/3"
    assert head_label("mtp", 0, single) == "MTP head 1/1 (repeated)"
    assert head_label("mtp", 1) == "MTP head 2"  # a pass read without its run's start
    assert head_label("eagle3", 0, eagle) == "EAGLE-3 head, features from target layers 1, 2, 3"
    ev = PassEvent(index=3, k=5, settings=Settings(drafter="mtp"), draft_heads=(0, 1, 2))
    assert drafted_by(ev, 2, chain) == "drafted by MTP head 3/3" and drafted_by(ev, 3, chain) == ""
    assert pass_heads(ev, chain) == ("drafts by MTP heads 1, 2, 3 of 3 (k = 5 > 3 heads: llama.cpp drafts one "
                                     "position per head)")
    assert pass_heads(PassEvent(settings=Settings(drafter="model"))) == ""
    assert step_cost(0.5, 2.0, "mtp") == "MTP head 0.50 ms per draft step · target decode 2.00 ms (0.25x)"
    # a head path from a trace is shown escaped
    from spectui.views.heads import head_file

    assert "\x1b" not in head_file(RunStarted(head=HeadInfo(kind="mtp", path="a\x1b[2Jb")))


async def test_tui_status_line_and_inspector_name_the_head(spec_dir):
    from spectui.tui.run.app import SpectuiApp
    from spectui.tui.run.run_metrics import RunMetrics
    from spectui.tui.run.status_line import StatusLine
    from spectui.views.inspector import view_at
    from spectui.views.view import InspectCursor

    sys.path.insert(0, str(ROOT / "tests" / "tui"))
    from test_tui_engine import ListRecorder, wait_until

    engine = Engine(str(spec_dir / "mtp-chain-agree-target.gguf"), n_ctx=256, threads=1, head="mtp",
                    inspect_top=3, warn=lambda m: None)
    try:
        control = RunControl(Settings(draft_max=2, temperature=0.0, drafter="mtp"))
        app = SpectuiApp(lambda c, p: engine.run(p, c, 24), control, recorder=ListRecorder(), n_predict=24,
                         prompt=PROMPT)
        async with app.run_test(size=(120, 30)) as pilot:
            await wait_until(pilot, lambda: app.snap is not None and app.snap.end is not None and not app.running)
            assert "drafter mtp (2 chained heads)" in app.query_one(StatusLine).text.plain
            drafted = [pv for pv in app.snap.recent if pv.event is not None and len(pv.event.drafts) == 2]
            assert drafted
            v = view_at(app.snap.recent, InspectCursor(drafted[-1].index, 1), app.snap.start.head)
            assert v is not None and "drafted by MTP head 2/2" in v.notes
            metrics = app.query_one(RunMetrics)
            text = metrics.draw(100, 12).plain  # a panel with room for the step line
            assert "step MTP head " in text and " ms per draft step · target decode " in text
    finally:
        engine.close()
