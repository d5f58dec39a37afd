"""EAGLE-3 heads and MTP layers as engine drafters (``Engine(head=...)``, ``--drafter eagle3 | mtp``): they run
in spectui's own pass loop with the same events and acceptance rules as a draft model, on the tiny GGUFs
benchmarks/make_spec_models.py writes.

- greedy output equals the target-only greedy output (lossless), on the pairs whose heads are accepted;
- at temperature 0, the drafted and accepted totals equal llama-server's (--spec-type draft-eagle3 /
  draft-mtp, the reference of tests/engine/test_spec_models.py), when llama-server is built;
- at T > 0 the second emitted token follows the target's law (chi-square, as tests/engine/test_engine_sampling.py);
- the command: a headless run exits 0, records the kind in its trace, and the trace replays; the kind is
  detected from the draft's metadata; what cannot be drafted with gets one line and exit 2."""

from __future__ import annotations

import json
import subprocess
import sys
from collections import Counter
from pathlib import Path

import pytest
from test_engine_sampling import chi2_check, target_law
from test_spec_models import _server_completion, shared_spec

from spectui.contract.control import RunControl
from spectui.contract.errors import SpectuiError
from spectui.contract.events import PassEvent, RunEnded, RunStarted, Settings
from spectui.engine.loop import Engine

PROMPT = "the hash map"
N_PREDICT, K = 24, 3


@pytest.fixture(scope="module")
def spec_dir(tiny_dir) -> Path:
    return shared_spec(tiny_dir, "--eagle3-agree", "0.5", "--mtp-agree", "0.5")  # the plain models too


def _pair(spec_dir: Path, kind: str, agree: bool = True) -> tuple[str, str | None]:
    a = "-agree" if agree else ""
    if kind == "eagle3":
        return str(spec_dir / f"eagle3{a}-target.gguf"), str(spec_dir / f"eagle3{a}-draft.gguf")
    return str(spec_dir / f"mtp{a}-target.gguf"), None


def _engine(spec_dir: Path, kind: str, agree: bool = True, **kw) -> Engine:
    t, d = _pair(spec_dir, kind, agree)
    return Engine(t, d, n_ctx=256, threads=1, head=kind, warn=lambda m: None, **kw)


def _run(e: Engine, settings: Settings, n_predict: int = N_PREDICT, prompt: str = PROMPT, on_event=None):
    control = RunControl(settings)
    evs = []
    for ev in e.run(prompt, control, n_predict):
        evs.append(ev)
        if on_event is not None:
            on_event(control, ev)
    return evs


def _emitted(evs) -> list[int]:
    return [t.id for ev in evs if isinstance(ev, PassEvent) for t in ev.emitted]


@pytest.mark.slow  # seconds of processes or large inputs: the full suite runs it, the fast lane does not
@pytest.mark.parametrize("kind", ["eagle3", "mtp"])
def test_greedy_head_run_is_lossless(spec_dir, kind):
    """The head's drafts are partly accepted, and the output is the target's own greedy output; the events
    are a draft model's (q of each draft from the head's row, the inspector's top-N)."""
    with _engine(spec_dir, kind) as e:
        ref = _emitted(_run(e, Settings(draft_max=0, drafter="none")))
        evs = _run(e, Settings(draft_max=K, drafter=kind))
    start, end = evs[0], evs[-1]
    assert isinstance(start, RunStarted) and start.settings.drafter == kind
    assert isinstance(end, RunEnded) and end.reason == "n_predict" and end.error == ""
    assert _emitted(evs) == ref and len(ref) == N_PREDICT
    assert end.n_drafted > 0 and 0 < end.n_accepted < end.n_drafted  # accepted and rejected drafts both ran
    drafted = [d for ev in evs if isinstance(ev, PassEvent) for d in ev.drafts]
    assert {"accepted", "rejected"} <= {d.verdict for d in drafted}
    for ev in evs:
        if isinstance(ev, PassEvent) and not ev.prefill and ev.drafts:
            for d, ins in zip(ev.drafts, ev.inspect):
                assert 0.0 < d.prob <= 1.0  # q(d): the head's row at temperature 1
                assert ins.draft_top and ins.draft_top[0].id == d.id  # T = 0: the draft is the head's argmax
                assert ins.draft_top[0].prob == pytest.approx(d.prob)


@pytest.mark.parametrize("kind", ["eagle3", "mtp"])
def test_switching_drafters_mid_run_stays_lossless(spec_dir, kind):
    """The head sees every target decode, whoever drafted: switching to ngram / none and back mid-run (the
    TUI's `d`) keeps its state in step, and the output stays the target's greedy output; overlapped too."""
    order = [kind, "ngram", kind, "none", kind]

    def switch(control, ev):
        if isinstance(ev, PassEvent) and ev.index % 3 == 2:
            control.update(drafter=order[(ev.index // 3) % len(order)])

    with _engine(spec_dir, kind) as e:
        ref = _emitted(_run(e, Settings(draft_max=0, drafter="none"), n_predict=40))
        evs = _run(e, Settings(draft_max=K, drafter=kind), n_predict=40, on_event=switch)
        used = {ev.settings.drafter for ev in evs if isinstance(ev, PassEvent)}
        assert used >= {kind, "ngram", "none"}
        passes = [ev for ev in evs if isinstance(ev, PassEvent) and not ev.prefill]
        first_other = next(i for i, ev in enumerate(passes) if ev.settings.drafter != kind)
        after = [d.verdict for ev in passes[first_other:] if ev.settings.drafter == kind for d in ev.drafts]
        assert "accepted" in after  # the head, back after others drafted, is accepted again
        assert _emitted(evs) == ref
        control = RunControl(Settings(draft_max=K, drafter=kind))
        over = list(e.run(PROMPT, control, 40, overlap=True))
        assert _emitted(over) == ref and over[-1].n_accepted > 0


@pytest.mark.parametrize("kind, agree, p_min", [
    ("eagle3", True, 0.0), ("eagle3", False, 0.3),  # (the agreeing head is never below 0.99: the random one)
    ("mtp", True, 0.0), ("mtp", True, 0.3)])
def test_head_totals_equal_llama_server(spec_dir, tmp_path, kind, agree, p_min):
    """At temperature 0 spectui's loop drafts and accepts, in total, what llama-server's own driver does on the
    same models, prompt, k, n_predict and --draft-p-min."""
    from servers import SKIP_REASON, llama_server_binary

    binary = llama_server_binary()
    if binary is None:
        pytest.skip(SKIP_REASON)
    t, d = _pair(spec_dir, kind, agree)
    args = ["-m", t] + (["-md", d] if d else []) + ["--spec-type", f"draft-{kind}", "--spec-draft-n-max", str(K),
                                                  "--no-spec-draft-backend-sampling", "--spec-draft-p-min", str(p_min)]
    r, _ = _server_completion(binary, args, tmp_path / f"{kind}.log", n_predict=N_PREDICT)
    with _engine(spec_dir, kind, agree) as e:
        evs = _run(e, Settings(draft_max=K, drafter=kind, draft_p_min=p_min))
    end = evs[-1]
    if p_min:  # the threshold cut some passes short (else this case tests nothing more)
        assert any(ev.draft_stop == "p_min" for ev in evs if isinstance(ev, PassEvent))
    assert r["timings"]["predicted_n"] == N_PREDICT == end.n_emitted
    assert end.n_accepted == r["timings"]["draft_n_accepted"]
    assert end.n_accepted > 0 or not agree
    assert end.n_drafted == r["timings"]["draft_n"]


@pytest.mark.parametrize("kind", ["eagle3", "mtp"])
@pytest.mark.slow  # a law checked over many samples
def test_head_sampling_matches_target_law(spec_dir, kind):
    """At T = 1 the token a head pass emits after the greedy first token follows the target's law, whatever
    the head proposed (q from the head's row, the same rejection sampling as a draft model)."""
    runs = 600
    t, _ = _pair(spec_dir, kind)
    with _engine(spec_dir, kind) as e:
        prompt_ids = e.tokenize(PROMPT)
        second, verdicts, t0 = Counter(), Counter(), None
        for seed in range(runs):
            def at(control, ev):
                if isinstance(ev, PassEvent):
                    if ev.prefill:
                        control.update(temperature=1.0)
                    elif ev.index == 1:
                        verdicts.update(d.verdict for d in ev.drafts)
            out = _emitted(_run(e, Settings(draft_max=2, drafter=kind, seed=seed), n_predict=3, on_event=at))
            t0 = out[0] if t0 is None else t0
            assert out[0] == t0 and len(out) >= 2
            second[out[1]] += 1
    assert verdicts["accepted"] > 20 and verdicts["rejected"] > 20, verdicts
    chi2, bound = chi2_check(second, target_law(t, prompt_ids + [t0]), runs)
    assert chi2 < bound, (chi2, bound)


def test_engine_refuses_what_a_head_cannot_draft_with(spec_dir):
    plain_t, head = str(spec_dir / "eagle3-target.gguf"), str(spec_dir / "eagle3-draft.gguf")
    cases = [
        (dict(target_path=plain_t, draft_path=plain_t, head="eagle3"), "--drafter eagle3 needs an EAGLE-3 head"),
        (dict(target_path=plain_t, draft_path=None, head="eagle3"), "--drafter eagle3 needs the EAGLE-3 head"),
        (dict(target_path=plain_t, draft_path=None, head="mtp"), "--drafter mtp needs a target with MTP"),
        (dict(target_path=str(spec_dir / "mtp-target.gguf"), draft_path=head, head="mtp"), "MTP sidecar"),
    ]
    for kw, msg in cases:
        with pytest.raises(SpectuiError) as exc:
            Engine(n_ctx=256, threads=1, **kw)
        assert msg in str(exc.value) and "\n" not in str(exc.value) and exc.value.exit_code == 2


# ---------------------------------------------------------------- the command


def _spectui(*args: str, timeout: int = 300) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "spectui", *args], capture_output=True, text=True, timeout=timeout)


def _trace_settings(path: Path) -> dict:
    import gzip

    opener = gzip.open if path.read_bytes()[:2] == b"\x1f\x8b" else open
    with opener(path, "rt") as fh:
        for line in fh:
            rec = json.loads(line)
            if rec.get("type") == "RunStarted" or rec.get("event") == "RunStarted":
                return rec.get("settings") or rec["data"]["settings"]
    raise AssertionError("no RunStarted in the trace")


@pytest.mark.parametrize("kind", ["eagle3", "mtp"])
@pytest.mark.slow  # two CLI runs and a replay each
def test_headless_run_records_the_kind_and_replays(spec_dir, tmp_path, kind):
    t, d = _pair(spec_dir, kind)
    trace = tmp_path / f"{kind}.trace"
    r = _spectui("--target", t, *(["--draft", d] if d else []), "--drafter", kind, "--headless", "-n", "32",
                 "-p", PROMPT, "--no-probe", "--record", str(trace))
    assert r.returncode == 0, r.stderr
    assert f"drafter                {kind} (" in r.stdout
    rp = _spectui("replay", str(trace), "--headless")
    assert rp.returncode == 0, rp.stderr
    assert f"drafter                {kind} (" in rp.stdout
    js = _spectui("replay", str(trace), "--json")
    assert js.returncode == 0, js.stderr
    assert f'"drafter": "{kind}"' in js.stdout


@pytest.mark.slow  # seconds of processes or large inputs: the full suite runs it, the fast lane does not
def test_drafter_is_detected_from_the_draft_metadata(spec_dir, tmp_path):
    t, d = _pair(spec_dir, "eagle3")
    r = _spectui("--target", t, "--draft", d, "--headless", "-n", "8", "-p", PROMPT, "--no-probe", "--json")
    assert r.returncode == 0, r.stderr
    assert '"drafter": "eagle3"' in r.stdout


@pytest.mark.slow  # five CLI runs
def test_commands_refuse_in_one_line(spec_dir, tmp_path):
    plain_t, head = str(spec_dir / "eagle3-target.gguf"), str(spec_dir / "eagle3-draft.gguf")
    r = _spectui("--target", plain_t, "--draft", plain_t, "--drafter", "eagle3", "--headless", "-n", "4")
    assert r.returncode == 2 and "--drafter eagle3 needs an EAGLE-3 head" in r.stderr
    assert len(r.stderr.strip().splitlines()) == 1
    r = _spectui("--target", plain_t, "--drafter", "mtp", "--headless", "-n", "4")
    assert r.returncode == 2 and "--drafter mtp needs a target with MTP (NextN) layers" in r.stderr
    assert len(r.stderr.strip().splitlines()) == 1
    # the commands draft with heads now (tests/commands/test_heads_commands.py); what they cannot draft with:
    for cmd, msg in ((["sweep", "--drafter", "mtp"], "is an EAGLE-3 head (drop it, or use --drafter eagle3)"),
                     (["bench", "--drafter", "model,eagle3"], "is an EAGLE-3 head: give it as --head")):
        r = _spectui(*cmd, "--target", plain_t, "--draft", head)
        assert r.returncode == 2, (cmd, r.stderr)
        assert msg in r.stderr, (cmd, r.stderr)
        assert len(r.stderr.strip().splitlines()) == 1
    r = _spectui("sweep", "--target", plain_t, "--draft", head, "-n", "4", "-k", "2", "--temp", "0", "--json")
    assert r.returncode == 0, r.stderr  # sweep with an EAGLE-3 head detected from the draft's header
    assert json.loads(r.stdout)["params"]["drafter"] == "eagle3"
