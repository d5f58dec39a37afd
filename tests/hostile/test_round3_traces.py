"""The third hostile-input report (../shared/reports/bad-input-2026-12-06.md), its traces that lie (items 5 and 6 of
"Hostile input III"): well-typed values no run records (k = 10^9, more accepted than drafted, negative counts,
probabilities of 7.5, a second `start`, an `end` mid-file, 200 times the tokens a pass may emit, prompt_tokens
-100, n_ctx_used 10^12). Each case is a small trace written here (a well-formed synthetic run, then the lie), read
by real processes (``python -m spectui``): every face reads it without a traceback, one warning per kind of lie
names the first pass and counts the rest, and the value is clamped or skipped the same way for every face
(docs/untrusted-input.md). The million-pass figures are benchmarks/million_passes.py's; here a bounded size.
"""

from __future__ import annotations

import copy
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from in_process import both_ways, spectui_in_process
from peak_rss import run_peak

from spectui.recording.trace import synthetic_run, write_trace

REPO = Path(__file__).resolve().parents[2]
N_PASSES = 30  # decode passes after the prefill: 31 passes, a settings change before pass 15


def spectui(*args: str, timeout: float = 180) -> subprocess.CompletedProcess:
    env = dict(os.environ, PYTHONPATH=str(REPO), NO_COLOR="1")
    return subprocess.run([sys.executable, "-m", "spectui", *map(str, args)], stdin=subprocess.DEVNULL,
                          capture_output=True, env=env, timeout=timeout)


def in_process(*args: str, timeout: float = 180) -> subprocess.CompletedProcess:
    """``spectui`` above in this process (tests/in_process.py), its output bytes as the process's."""
    return spectui_in_process(*args, env={"NO_COLOR": "1"}, text=False)


cli = both_ways(spectui, in_process)  # exit status and lines only: in this process in the fast lane


def _events(path: Path) -> tuple[str, list[dict]]:
    lines = path.read_text(encoding="utf-8").splitlines()
    return lines[0], [json.loads(x) for x in lines[1:]]


@pytest.fixture(scope="module")
def base(tmp_path_factory) -> Path:
    p = tmp_path_factory.mktemp("round3") / "base.jsonl"
    write_trace(p, synthetic_run(N_PASSES, seed=4))
    return p


def lie(base: Path, dst: Path, change) -> Path:
    """``base`` rewritten: ``change(events)`` edits the parsed events (a list of dicts) in place."""
    header, events = _events(base)
    change(events)
    dst.write_text(header + "\n" + "".join(json.dumps(e) + "\n" for e in events), encoding="utf-8")
    return dst


def passes(events: list[dict]) -> list[dict]:
    return [e for e in events if e["type"] == "pass"]


def k_huge(events):
    for e in events:
        if e["type"] == "pass":
            e["k"] = 10**9
        for s in (e.get("settings"), e.get("old"), e.get("new")):
            if s is not None:
                s["draft_max"] = 10**9


def acc_gt_k(events):
    for e in passes(events):
        e["n_accepted"] = e["k"] + 5


def negative(events):
    for e in passes(events):
        e["n_accepted"], e["k"] = -3, -2
    events[-1]["n_passes"] = -5


def prob_bad(events):
    for e in passes(events)[1:]:
        e["drafts"][0]["prob"] = 7.5
        e["drafts"][-1]["target_prob"] = -2
        e["target"]["prob"] = 1e300


def two_starts(events):
    events.insert(12, copy.deepcopy(events[0]))


def end_mid(events):
    events.insert(12, copy.deepcopy(events[-1]))


def emit_many(events):
    for e in passes(events):
        e["emitted"] = e["emitted"] * 200


def ids_bad(events):
    for e in passes(events):
        e["emitted"][0]["id"], e["target"]["id"] = 10**100, -7


def ctx_bad(events):
    events[0]["prompt_tokens"] = -100
    for e in passes(events):
        e["n_ctx_used"] = 10**12


# id -> (the lie, the warnings' words, one per kind, in order)
CASES = {
    "T-k_huge": (k_huge, ["line 2: settings.draft_max = 1000000000 is no draft length (0..32); read as 32 (and 33 more",
                          "line 3, pass 0: k = 1000000000 is no draft length (0..32); read as 32 (and 30 more"]),
    "T-cast-acc-gt-k": (acc_gt_k, ["line 3, pass 0: n_accepted = 5, but its verdicts accept 0 drafts; read as 0 "
                                   "(and 30 more like it)"]),
    "negative counts": (negative, ["line 3, pass 0: k = -2 is no draft length (0..32); read as 0 (and 30 more",
                                   "line 3, pass 0: n_accepted = -3, but its verdicts accept 0 drafts; read as 0",
                                   "line 4, pass 1: 3 drafts, more than its k = 0; k read as 3 (and 29 more",
                                   "end's n_passes = -5 is negative; read as 0"]),
    "T-prob_bad": (prob_bad, ["line 4, pass 1: draft 1's prob = 7.5 is no probability (0..1); read as 1 (and 29 more"]),
    "T-two_starts": (two_starts, ["line 14: a second run starts here (the first run's `start` is earlier); the 23 "
                                  "events from here skipped (a trace holds one run)"]),
    "T-end_mid": (end_mid, ["line 15: events after the run's `end` (line 14); the 22 events from here skipped"]),
    "T-emit_many": (emit_many, ["line 3, pass 0: 200 tokens emitted, more than its verdicts allow (1); the first 1 "
                                "kept (and 30 more like it)"]),
    "T-ctx_bad": (ctx_bad, ["line 2: start's prompt_tokens = -100 is negative; read as 0",
                            "line 3, pass 0: n_ctx_used = 1,000,000,000,000 is more than the run's context (1,048,576);"
                            " read as 1,048,576 (and 30 more like it)"]),
    "token ids": (ids_bad, ["line 3, pass 0: token id 1" + "0" * 100 + " is no token id (0..2,147,483,647); read as "
                            "2,147,483,647 (and 30 more like it)"]),  # replay --json kept them in 64 bits: a crash
}


def warnings_of(r: subprocess.CompletedProcess, path: Path) -> list[str]:
    err = r.stderr.decode("utf-8", "replace")
    assert "Traceback" not in err, err
    lines = [x for x in err.splitlines() if x.strip()]
    prefix = f"spectui: warning: {path}: "
    assert all(x.startswith(prefix) for x in lines), lines
    return [x[len(prefix):] for x in lines]


def check_warnings(got: list[str], want: list[str]) -> None:
    assert len(got) == len(want), got  # one line per kind of lie, not one per pass
    for line, words in zip(got, want):
        assert words in line, (line, words)


@pytest.mark.slow  # seconds of processes or large inputs: the full suite runs it, the fast lane does not
@pytest.mark.parametrize("case", list(CASES))
def test_a_lie_is_one_warning_per_kind_and_the_json_is_what_a_run_could_record(tmp_path, base, case):
    change, want = CASES[case]
    t = lie(base, tmp_path / "t.jsonl", change)
    r = spectui("replay", "--json", t)
    assert r.returncode == 0
    check_warnings(warnings_of(r, t), want)
    got = json.loads(r.stdout)
    clean = json.loads(spectui("replay", "--json", base).stdout)
    for p in got["passes"]:
        assert 0 <= p["k"] <= 32 and len(p["drafts"]) <= p["k"] and 0 <= p["n_ctx_used"] <= 1 << 20
        n_acc = sum(d["verdict"] == "accepted" for d in p["drafts"])
        assert p["n_accepted"] == n_acc and len(p["emitted"]) <= n_acc + 1
        assert all(0 <= d["prob"] <= 1 and 0 <= d["target_prob"] <= 1 for d in p["drafts"])
        assert all(0 <= x["prob"] <= 1 for x in p["emitted"]) and 0 <= p["target"]["prob"] <= 1
    assert got["start"]["prompt_tokens"] >= 0
    if case in ("T-cast-acc-gt-k", "negative counts", "T-emit_many"):  # the lie undone: the run as recorded
        assert got["passes"] == clean["passes"] and got["tokens"] == clean["tokens"]
        assert got["tokens_per_second"] == clean["tokens_per_second"]
    if case in ("T-two_starts", "T-end_mid"):  # one run: the passes before the second start / the end
        assert got["n_passes"] == 10 and len(got["passes"]) == 11
    if case == "T-k_huge":
        assert got["n_draft"] == 32 and all(p["settings"]["draft_max"] == 32 for p in got["passes"])


@pytest.mark.slow  # seconds of processes or large inputs: the full suite runs it, the fast lane does not
def test_T_emit_many_replays_the_speed_the_verdicts_allow(tmp_path, base):
    """The report's 1760 t/s and 639 tokens a pass: now the recorded run's figures, with one warning."""
    t = lie(base, tmp_path / "emit_many.jsonl", emit_many)
    r = spectui("replay", "--headless", t)
    clean = spectui("replay", "--headless", base)
    assert r.returncode == 0 and len(warnings_of(r, t)) == 1
    summary = r.stdout.decode().split("\n\n")[-1]
    assert summary == clean.stdout.decode().split("\n\n")[-1]
    assert "tokens per pass        " in summary and "tokens per pass        200" not in summary


def test_T_ctx_bad_says_no_negative_prompt(tmp_path, base, cli):
    t = lie(base, tmp_path / "ctx_bad.jsonl", ctx_bad)
    r = cli("replay", "--headless", t)
    assert r.returncode == 0 and "encoded    0 tokens" in r.stdout.decode() and "-100" not in r.stdout.decode()


@pytest.mark.slow  # seconds of processes or large inputs: the full suite runs it, the fast lane does not
def test_T_khuge_cast_and_the_replay_app_draw_it(tmp_path, base):
    """T-khuge-cast and U-khuge-tui: the cast is the replay TUI's own app (its prediction panel crashed on
    k = 10^9, IndexError in costmodel.drafted); it is drawn, with the same warnings."""
    t = lie(base, tmp_path / "k_huge.jsonl", k_huge)
    out = tmp_path / "k.cast"
    r = spectui("cast", t, "-o", out, "--cols", "80", "--rows", "24", "--speed", "8")
    assert r.returncode == 0, r.stderr.decode()[-2000:]
    err = [x for x in r.stderr.decode().splitlines() if x.startswith("spectui: warning:")]
    check_warnings([x.split(f"{t}: ", 1)[1] for x in err], CASES["T-k_huge"][1])
    assert out.stat().st_size > 0 and "k=32" in out.read_text(encoding="utf-8")


def test_a_run_drafting_k_32_draws_the_prediction_panel(tmp_path):
    """A real draft length past the cost model's K_MAX (16): -k 32 is allowed, the panel must not index past it."""
    from spectui.analysis.cost.costmodel import K_MAX, predict_from

    pred = predict_from((0.5,) * 4, (10,) * 4, {0: 10.0, 1: 11.0, 2: 12.0}, 1.0, k_max=K_MAX, current_k=32)
    assert pred.drafted(32) == 32.0 and not pred.stops_early(32)


@pytest.mark.slow  # seconds of processes or large inputs: the full suite runs it, the fast lane does not
@pytest.mark.parametrize("case", ["T-k_huge", "T-prob_bad", "T-emit_many", "T-end_mid"])
def test_every_face_reads_the_same_cleaned_stream(tmp_path, base, case):
    """race --headless, --explain and replay --headless read the lie as replay --json does: no traceback, the same
    warnings, the same figures."""
    change, want = CASES[case]
    t = lie(base, tmp_path / "t.jsonl", change)
    js = json.loads(spectui("replay", "--json", t).stdout)
    race = spectui("race", "--headless", "--json", t, base)
    assert race.returncode == 0
    check_warnings(warnings_of(race, t), want)
    lane = json.loads(race.stdout)["lanes"][0]
    assert lane["tokens"] == len(js["tokens"]) and lane["acceptance_rate"] == js["acceptance_rate"]
    ex = spectui("replay", "--explain", "3", "--json", t)
    assert ex.returncode == 0 and "Traceback" not in ex.stderr.decode()
    assert json.loads(ex.stdout)["k"] == js["passes"][3]["k"]
    head = spectui("replay", "--headless", t)
    check_warnings(warnings_of(head, t), want)


@pytest.mark.slow  # seconds of processes or large inputs: the full suite runs it, the fast lane does not
def test_a_million_lies_are_one_line_each(tmp_path):
    """Every pass of a long trace lies: the warnings stay one line per kind, counted."""
    src = tmp_path / "src.jsonl"
    write_trace(src, synthetic_run(20_000, seed=2))
    header, events = _events(src)
    k_huge(events)
    for e in passes(events):  # each pass emits twice what its verdicts allow (emit_many's x200 made a 555 MB file)
        e["emitted"] = e["emitted"] * 2
    t = tmp_path / "long.jsonl"
    t.write_text(header + "\n" + "".join(json.dumps(e) + "\n" for e in events), encoding="utf-8")
    rc, _s, _mb, out, err = run_peak("replay", "--headless", t, timeout=600)
    lines = err.decode().splitlines()
    assert rc == 0 and len(lines) == 3, lines
    assert "settings.draft_max" in lines[0] and "(and 20,003 more like it)" in lines[0]  # the start, passes, change
    assert "k = 1000000000" in lines[1] and "(and 20,000 more like it)" in lines[1]
    assert "tokens emitted" in lines[2] and "(and 20,000 more like it)" in lines[2]


@pytest.fixture(scope="module")
def long_traces(tmp_path_factory) -> dict[int, Path]:
    d = tmp_path_factory.mktemp("long")
    out = {}
    for n in (10_000, 100_000):
        out[n] = d / f"run{n}.jsonl"
        write_trace(out[n], synthetic_run(n, seed=1))
    return out


@pytest.mark.slow  # seconds of processes or large inputs: the full suite runs it, the fast lane does not
@pytest.mark.parametrize("face", [["replay", "--headless"], ["replay", "--json"], ["race", "--headless"]])
def test_T_big_replay_and_race_stay_flat(long_traces, tmp_path, face):
    """T-big1m-replay, T-big1m-json, T-race-100k at a bounded size: 100,000 passes read in flat memory (the peak of
    a 100,000-pass trace within 60 MB of a 10,000-pass one's, under 150 MB) and in a time linear in the passes
    (generous for a busy 2-core machine: the million-pass figures are benchmarks/million_passes.py's)."""
    short = tmp_path / "short.jsonl"
    write_trace(short, synthetic_run(50, seed=9))
    extra = ["--any-prompt", short] if face[0] == "race" else []
    peaks = {}
    for n, path in long_traces.items():
        rc, seconds, peaks[n], out, err = run_peak(*face, path, *extra, timeout=900)
        assert rc == 0 and not err.strip(), err.decode()[-2000:]
        assert out.strip()
    assert seconds < 600, seconds
    assert peaks[100_000] < peaks[10_000] + 60 and peaks[100_000] < 150, peaks


@pytest.mark.slow  # seconds of processes or large inputs: the full suite runs it, the fast lane does not
def test_T_cast_cols1000_100k_stays_under_300_mb(long_traces, tmp_path):
    """T-cast-cols1000-100k: ``cast`` of a 100,000-pass trace at 1000 x 1000 (was 661 MB at 60 s) plans its frames
    from a stream and keeps its drawn output in a temporary file: stopped after 40 s (the whole cast takes over an
    hour at that size), its peak is under the 300 MB the issue allows, and no half-written cast is left at -o."""
    out = tmp_path / "big.cast"
    rc, seconds, mb, _out, err = run_peak("cast", long_traces[100_000], "-o", out, "--cols", "1000", "--rows",
                                          "1000", "--speed", "8", timeout=40)
    assert rc == -9 and seconds >= 40, (rc, seconds, err.decode()[-2000:])  # still drawing when stopped
    assert mb < 300, mb
    assert not out.exists()


def test_json_passes_written_as_they_come_say_null_for_a_nan():
    """--json writes each pass as it comes (to a temporary file, then after the summary): a live run's NaN is null
    there as in the whole object, and the text parses as one JSON object with every pass."""
    import io

    from spectui.contract.events import PassEvent, Timing
    from spectui.text.run import consume

    events = list(synthetic_run(5, seed=1))
    events.insert(3, PassEvent(index=99, timing=Timing(wall_ms=float("nan"), t_end=1.0)))
    out = io.StringIO()
    consume(iter(events), out, as_json=True)
    got = json.loads(out.getvalue())
    assert len(got["passes"]) == 7 and got["passes"][2]["timing"]["wall_ms"] is None
    assert got["tokens"] == [t.id for e in events if isinstance(e, PassEvent) for t in e.emitted]


def test_a_forged_tree_replays_and_is_counted_as_nodes(base, tmp_path):
    """A tree pass whose parents point nowhere (before the root, past the nodes, at itself) and whose texts carry
    escapes: replay reads it, counts its nodes by depth without looping, and never prints the raw escape."""
    def forged_tree(events):
        for e in passes(events)[1:]:
            e["tree"] = [{"id": 5, "text": "\x1b[2Jx", "prob": 0.5, "parent": p, "verdict": "accepted",
                          "target_prob": 0.4} for p in (-7, 10**9, 2, 0)]
    t = lie(base, tmp_path / "tree.jsonl", forged_tree)
    for face in (["replay", "--headless"], ["replay", "--json"]):
        r = spectui(*face, t)
        assert r.returncode == 0, r.stderr.decode()[-2000:]
        assert b"\x1b" not in r.stdout and b"\x1b" not in r.stderr
        warnings_of(r, t)
    data = json.loads(spectui("replay", "--json", t).stdout)
    tree = data["tree"]
    assert tree["nodes"] == 4 * (len(passes(_events(t)[1])) - 1), tree
