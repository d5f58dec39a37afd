"""The block drafters (``--drafter dflash | dspark``, llama.cpp's ``draft-dflash`` / ``draft-dspark``) on the
generated pairs of ``benchmarks/make_spec_models.py DIR --dflash-agree A --dspark-agree A``:

- llama.cpp itself loads and runs the pairs (llama-speculative-simple, llama-server);
- greedy output equals the target alone's (lossless), drafts partly accepted;
- at T = 0 spectui's drafter, in llama-speculative-simple's own loop, drafts and accepts pass for pass (and so in
  total) what ``llama-speculative-simple --spec-type draft-dflash / draft-dspark`` does on the same models,
  prompt, -n, k and --spec-draft-p-min; the engine's run (whose prefill pass samples the first token, as
  llama-server's) does what llama-server does, pass for pass;
- one draft decode per drafting pass, whatever k (the block is drafted at once);
- at T = 1 the token emitted after the greedy first one follows the target's law (chi-square);
- what they cannot draft with gets one line."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from collections import Counter
from pathlib import Path

import numpy as np
import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # tests/engine: the shared law and server helpers

from greedy_checks import emitted_ids  # noqa: E402
from test_engine_sampling import chi2_check, target_law  # noqa: E402
from test_vs_llama_cpp import logged, speculative_simple  # noqa: E402

from spectui.contract.control import RunControl  # noqa: E402
from spectui.contract.errors import SpectuiError  # noqa: E402
from spectui.contract.events import PassEvent, RunEnded, RunStarted, Settings  # noqa: E402
from spectui.engine.loop import Engine  # noqa: E402

ROOT = Path(__file__).resolve().parents[3]
MAKER = ROOT / "benchmarks" / "make_spec_models.py"
PROMPT = "the hash map handles collisions"
KINDS = ("dflash", "dspark")
ACCEPTED = re.compile(r"accepted (\d+)/(\d+) draft tokens")
DRAFTED, ACCEPTS = re.compile(r"n_drafted = (\d+)"), re.compile(r"n_accept  = (\d+)")


def _make(out: Path, agree: float) -> Path:
    r = subprocess.run([sys.executable, str(MAKER), str(out), "--dflash-agree", str(agree), "--dspark-agree",
                        str(agree)], capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr
    return out


@pytest.fixture(scope="module")
def pairs(tmp_path_factory) -> dict[float, Path]:
    """Two agreement levels: 0 (each mask slot carries the anchor only) and 30 (the context mixed in)."""
    root = tmp_path_factory.mktemp("block")
    return {a: _make(root / f"a{a:g}", a) for a in (0.0, 30.0)}


def _files(d: Path, kind: str) -> tuple[str, str]:
    return str(d / f"{kind}-agree-target.gguf"), str(d / f"{kind}-agree-draft.gguf")


def _engine(d: Path, kind: str, **kw) -> Engine:
    t, dr = _files(d, kind)
    return Engine(t, dr, n_ctx=512, threads=1, head=kind, warn=lambda m: None, **kw)


def _run(e: Engine, settings: Settings, n: int, prompt: str = PROMPT, on_event=None) -> list:
    control = RunControl(settings)
    evs = []
    for ev in e.run(prompt, control, n):
        evs.append(ev)
        if on_event is not None:
            on_event(control, ev)
    return evs


def test_maker_writes_pairs_of_the_two_kinds(pairs):
    from spectui.engine.files.spec_kinds import spec_info

    for kind in KINDS:
        t, d = _files(pairs[0.0], kind)
        ti, di = spec_info(t), spec_info(d)
        assert (ti.architecture, ti.kind) == ("llama", "model")
        assert (di.architecture, di.kind, di.llama_cpp_types) == ("dflash", kind, (f"draft-{kind}",))
        assert di.target_layer_ids == (1, 3)


# ---------------------------------------------------------------- llama-speculative-simple, pass for pass


def _theirs(d: Path, kind: str, n: int, k: int, p_min: float) -> tuple[list[tuple[int, int]], tuple[int, int]]:
    t, dr = _files(d, kind)
    argv = [str(speculative_simple()), "-m", t, "-md", dr, "--spec-type", f"draft-{kind}", "--spec-draft-n-max",
            str(k), "--spec-draft-p-min", str(p_min), "-p", PROMPT, "-n", str(n), "--temp", "0", "-t", "1", "-c",
            "512", "-lv", "5"]
    log = logged(argv)
    drafted, accepted = DRAFTED.search(log), ACCEPTS.search(log)
    assert drafted and accepted, log[-2000:]
    return [(int(a), int(b)) for a, b in ACCEPTED.findall(log)], (int(drafted[1]), int(accepted[1]))


def _ours_in_their_loop(d: Path, kind: str, n: int, k: int, p_min: float) -> list[tuple[int, int]]:
    """examples/speculative-simple/speculative-simple.cpp, step for step, drafting with spectui's BlockDrafter:
    the prompt but its last token into the target, that token the first anchor; each pass drafts after the last
    token, verifies [anchor, drafts] at once, keeps the agreeing prefix, feeds the batch to the drafter and rolls
    both caches back; a draft is cut to what -n leaves (not when that is 0: the reference's ``n_max > 0``)."""
    from spectui.engine.drafters.base import DraftLimits
    from spectui.engine.drafters.block import BlockDrafter
    from spectui.engine.drafters.block_head import BlockHead
    from spectui.engine.llama.models import LoadedModel

    t_path, d_path = _files(d, kind)
    t = LoadedModel(t_path, "target", 512, 1, False)
    h = BlockHead(d_path, t.model, t.ctx, 512, dspark=kind == "dspark")
    drafter = BlockDrafter(kind, h)
    try:
        ids = t.tokenize(PROMPT)
        t.decode(ids[:-1], 0, "none")
        drafter.target_decoded(ids[:-1], 0)
        ctx, n_past, n_predict, passes = list(ids), len(ids) - 1, 0, []
        while True:
            n_draft_max = max(0, min(512 - n_past - 2, n - n_predict - 1))
            prop = drafter.propose(ctx, DraftLimits(k, p_min), 0.0, np.random.default_rng(0))
            drafts = prop.ids[:n_draft_max] if n_draft_max > 0 else prop.ids
            batch = [ctx[-1], *drafts]
            t.decode(batch, n_past, "all")
            rows = t.logits_rows(len(batch))
            out = []
            for i in range(len(batch)):
                out.append(int(np.argmax(rows[i])))
                if i == len(drafts) or out[-1] != drafts[i]:
                    break
            acc = len(out) - 1
            drafter.target_decoded(batch, n_past, acc)
            t.rollback(n_past + 1 + acc)
            passes.append((acc, len(drafts)))
            n_past += 1 + acc
            n_predict += len(out)
            ctx += out
            if n_predict > n or any(t.is_eog(x) for x in out):
                return passes
    finally:
        h.close()
        t.close()


@pytest.mark.alone  # the reference program's whole log: tests/run_alone.py
@pytest.mark.slow  # llama-speculative-simple runs
@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("agree, k, p_min", [(0.0, 4, 0.0), (30.0, 8, 0.0), (30.0, 6, 0.6)])
def test_counts_equal_llama_speculative_simple(pairs, kind, agree, k, p_min):
    n = 48
    theirs, (drafted, accepted) = _theirs(pairs[agree], kind, n, k, p_min)
    ours = _ours_in_their_loop(pairs[agree], kind, n, k, p_min)
    assert ours == theirs
    assert (sum(b for _, b in ours), sum(a for a, _ in ours)) == (drafted, accepted)
    assert accepted > 0 and drafted > accepted
    if p_min:  # the threshold cut some blocks short (else this case tests nothing more)
        assert any(b < k for _, b in ours[:-3])


# ---------------------------------------------------------------- the engine's runs


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("agree", [0.0, 30.0])
def test_greedy_block_run_is_lossless(pairs, kind, agree):
    """Drafts partly accepted, the output the target's own greedy output (passes finished inline and overlapped);
    q(d) and the inspector's top-N from the block's rows (T = 0: the draft is its slot's argmax)."""
    with _engine(pairs[agree], kind) as e:
        ref = emitted_ids(_run(e, Settings(draft_max=0, drafter="none"), 40))
        evs = _run(e, Settings(draft_max=6, drafter=kind), 40)
        over = list(e.run(PROMPT, RunControl(Settings(draft_max=6, drafter=kind)), 40, overlap=True))
    assert emitted_ids(over) == ref and over[-1].n_accepted == evs[-1].n_accepted  # finished on the other thread
    start, end = evs[0], evs[-1]
    assert isinstance(start, RunStarted) and start.head is not None and start.head.kind == kind
    assert isinstance(end, RunEnded) and end.reason == "n_predict" and end.error == ""
    assert emitted_ids(evs) == ref and len(ref) == 40
    assert end.n_drafted > 0 and 0 < end.n_accepted < end.n_drafted
    for ev in evs:
        if isinstance(ev, PassEvent) and not ev.prefill and ev.drafts:
            assert ev.drafter == kind
            for dr, ins in zip(ev.drafts, ev.inspect):
                assert 0.0 < dr.prob <= 1.0
                assert ins.draft_top and ins.draft_top[0].id == dr.id
                assert ins.draft_top[0].prob == pytest.approx(dr.prob)


@pytest.mark.parametrize("kind", KINDS)
def test_auto_k_with_a_block_drafter_is_lossless_and_priced_by_the_pass(pairs, kind):
    """--draft-max auto on the generated pair: the target's greedy output; the policy replayed on the run's
    events chooses every pass's k as the engine did, and prices the block by its measured pass, nothing per draft
    token."""
    from spectui.analysis.cost.draft_cost import block_line
    from spectui.analysis.cost.draft_policy import PolicyByMode, make_policy

    n = 48
    with _engine(pairs[30.0], kind, draft_policy=PolicyByMode) as e:
        ref = emitted_ids(_run(e, Settings(draft_max=0, drafter="none"), n))
        evs = _run(e, Settings(draft_max=2, drafter=kind, auto="cost"), n)
    assert isinstance(evs[-1], RunEnded) and evs[-1].reason == "n_predict" and evs[-1].error == ""
    assert emitted_ids(evs) == ref and evs[-1].n_drafted > 0
    pol, emitted, drafting = make_policy("cost"), 0, []
    for ev in evs:
        if isinstance(ev, PassEvent) and not ev.prefill:
            assert ev.k == max(0, min(pol.choose(ev.settings), n - emitted - 1))
            drafting += [ev] if ev.drafts else []
        emitted += len(ev.emitted) if isinstance(ev, PassEvent) else 0
        pol.observe(ev)
    assert drafting and all(ev.drafter == kind for ev in drafting)
    # priced by the pass: the pass's draft time kept by block length (not divided by its drafts), the price the
    # line through them
    by_k = pol.draft.by_k
    assert pol.draft.per_pass() and by_k and set(by_k) <= {len(ev.drafts) for ev in drafting}
    times = [ev.timing.draft_ms for ev in drafting]
    assert all(min(times) <= ms <= max(times) for ms in by_k.values())
    assert pol.draft.costs() == block_line(by_k, pol.draft.per_unit)


@pytest.mark.parametrize("kind", KINDS)
def test_switching_drafters_mid_run_stays_lossless(pairs, kind):
    """The block drafter reads every target decode, whoever drafted (the TUI's d): after ngram and none drafted,
    its blocks are accepted again and the output stays the target's greedy output."""
    order = [kind, "ngram", kind, "none", kind]

    def switch(control, ev):
        if isinstance(ev, PassEvent) and ev.index % 3 == 2:
            control.update(drafter=order[(ev.index // 3) % len(order)])

    with _engine(pairs[30.0], kind, head_in_every_run=True) as e:
        ref = emitted_ids(_run(e, Settings(draft_max=0, drafter="none"), 48))
        evs = _run(e, Settings(draft_max=4, drafter=kind), 48, on_event=switch)
    passes = [ev for ev in evs if isinstance(ev, PassEvent) and not ev.prefill]
    assert {ev.settings.drafter for ev in passes} >= {kind, "ngram", "none"}
    first_other = next(i for i, ev in enumerate(passes) if ev.settings.drafter != kind)
    assert "accepted" in [d.verdict for ev in passes[first_other:] if ev.settings.drafter == kind for d in ev.drafts]
    assert emitted_ids(evs) == ref


@pytest.mark.parametrize("kind", KINDS)
def test_engine_counts_equal_llama_server(pairs, tmp_path, kind):
    """The engine's run (prefill pass first, as llama-server's slot) drafts and accepts pass for pass what
    llama-server --spec-type draft-KIND does on the same pair, prompt, -n and k (the server logs no line for the
    pass that ends the completion)."""
    from servers import SKIP_REASON, LlamaServer, llama_server_binary

    binary = llama_server_binary()
    if binary is None:
        pytest.skip(SKIP_REASON)
    import json
    import urllib.request

    t, dr = _files(pairs[30.0], kind)
    n, k = 32, 5
    s = LlamaServer(binary, ["-m", t, "-md", dr, "--spec-type", f"draft-{kind}", "--spec-draft-n-max", str(k),
                             "--no-spec-draft-backend-sampling", "-lv", "5", "-c", "512", "-t", "1", "-np", "1"],
                    tmp_path / "server.log", ready_s=60)
    try:
        req = urllib.request.Request(s.url + "/completion", headers={"Content-Type": "application/json"},
                                     data=json.dumps({"prompt": PROMPT, "n_predict": n, "temperature": 0,
                                                      "cache_prompt": False}).encode())
        with urllib.request.urlopen(req, timeout=60) as r:
            timings = json.load(r)["timings"]
    finally:
        s.stop()
    theirs = [(int(a), int(b)) for a, b in ACCEPTED.findall((tmp_path / "server.log").read_text(errors="replace"))]
    with _engine(pairs[30.0], kind) as e:
        evs = _run(e, Settings(draft_max=k, drafter=kind), n)
    ours = [(p.n_accepted, len(p.drafts)) for p in evs if isinstance(p, PassEvent) and not p.prefill]
    assert len(theirs) >= 5 and ours[:len(theirs)] == theirs
    assert (evs[-1].n_drafted, evs[-1].n_accepted) == (timings["draft_n"], timings["draft_n_accepted"])


@pytest.mark.parametrize("kind", KINDS)
def test_one_draft_decode_per_pass_whatever_k(pairs, kind):
    """The block is drafted at once: each drafting pass costs the draft model one decode, at k 2, 8 and 15."""
    with _engine(pairs[30.0], kind) as e:
        head = e.parts().head.head
        for k in (2, 8, 15):
            before = head.n_runs
            evs = _run(e, Settings(draft_max=k, drafter=kind), 24)
            drafting = [ev for ev in evs if isinstance(ev, PassEvent) and not ev.prefill and ev.drafts]
            assert drafting and head.n_runs - before == len(drafting)
            assert max(len(ev.drafts) for ev in drafting) == min(k, head.n_draft_max)


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.slow  # a law checked over many samples
def test_block_sampling_matches_target_law(pairs, kind):
    """At T = 1 the token a block pass emits after the greedy first token follows the target's law, whatever the
    block proposed (q from each slot's row, the same rejection sampling as a draft model)."""
    runs = 600
    t, _ = _files(pairs[30.0], kind)
    with _engine(pairs[30.0], kind) as e:
        prompt_ids = e.tokenize(PROMPT)
        second, verdicts, t0 = Counter(), Counter(), None
        for seed in range(runs):
            def at(control, ev):
                if isinstance(ev, PassEvent):
                    if ev.prefill:
                        control.update(temperature=1.0)
                    elif ev.index == 1:
                        verdicts.update(d.verdict for d in ev.drafts)
            out = emitted_ids(_run(e, Settings(draft_max=3, drafter=kind, seed=seed), 3, on_event=at))
            t0 = out[0] if t0 is None else t0
            assert out[0] == t0 and len(out) >= 2
            second[out[1]] += 1
    assert verdicts["accepted"] > 20 and verdicts["rejected"] > 20, verdicts
    chi2, bound = chi2_check(second, target_law(t, prompt_ids + [t0]), runs)
    assert chi2 < bound, (chi2, bound)


def test_refusals_are_one_line(pairs):
    d = pairs[0.0]
    t, dflash_draft = _files(d, "dflash")
    _, dspark_draft = _files(d, "dspark")
    cases = [(dict(draft_path=dspark_draft, head="dflash"), "is a dspark draft (use --drafter dspark)"),
             (dict(draft_path=dflash_draft, head="dspark"), "is a dflash draft (use --drafter dflash)"),
             (dict(draft_path=None, head="dflash"), "--drafter dflash needs the dflash draft as --draft PATH"),
             (dict(draft_path=t, head="dspark"), "is a plain model")]
    for kw, msg in cases:
        with pytest.raises(SpectuiError) as exc:
            Engine(t, n_ctx=256, threads=1, **kw)
        assert msg in str(exc.value) and "\n" not in str(exc.value) and exc.value.exit_code == 2


# ---------------------------------------------------------------- what the faces say of a block drafter


@pytest.mark.parametrize("kind", KINDS)
def test_cost_model_prices_the_block_by_its_one_pass(pairs, kind):
    """The run's draft time goes to a fixed cost per drafting pass, none per draft token: the draft cost the
    model predicts is the same at every k > 0 (only verification grows with k)."""
    from spectui.analysis.cost.block_cost import block_drafted
    from spectui.analysis.cost.costmodel import predict
    from spectui.analysis.stats import compute

    with _engine(pairs[30.0], kind) as e:
        snap = compute(_run(e, Settings(draft_max=6, drafter=kind), 32))
    assert block_drafted(snap)
    p = predict(snap, k_max=12)
    per_pass = snap.draft_ms_total / max(snap.passes_drafted, sum(dict(snap.draft_stops).values()))
    assert p.draft_ms_per_token == 0.0 and p.draft_ms_fixed == pytest.approx(per_pass) and per_pass > 0
    drafting = [m - v - p.other_ms_per_pass for m, v in zip(p.ms_per_pass_by_k, p.verify_ms_expected_by_k)]
    assert drafting[0] == pytest.approx(0.0, abs=1e-9)
    assert all(x == pytest.approx(per_pass) for x in drafting[1:])
    assert "a draft pass costs" in p.advice or "(draft pass " in p.advice


@pytest.mark.parametrize("kind", KINDS)
async def test_the_ribbon_shows_the_block_arriving_at_once(pairs, kind):
    """Each drafting pass's drafts in brackets (one block, one draft pass), within 80 columns, the same in the
    ASCII face (no colour needed: the brackets are characters); the newest pass says its draft cost as one pass,
    the title's legend explains the brackets, and the step line prices the draft by its pass."""
    from dataclasses import replace

    from rich.cells import cell_len

    from spectui.tui.run.app import SpectuiApp
    from spectui.tui.run.run_metrics import RunMetrics
    from spectui.tui.shared.ascii import to_ascii
    from spectui.tui.shared.panel import fmt_ms
    from spectui.tui.shared.pass_ribbon import BLOCK_LEGEND, PassRibbon

    with _engine(pairs[30.0], kind) as e:
        events = _run(e, Settings(draft_max=6, drafter=kind), 32)
    app = SpectuiApp(lambda c, p: iter(events), RunControl())
    async with app.run_test(size=(80, 24)) as pilot:
        await app.workers.wait_for_complete()
        app.refresh_from_state()
        await pilot.pause()
        ribbon = app.query_one(PassRibbon)
        lines = ribbon.render().plain.splitlines()
        metrics = app.screen.query_one(RunMetrics).draw(80, 12).plain
        view = next(p for p in reversed(app.snap.recent) if p.drafts)  # the newest drafting pass, drawn in detail
        width = ribbon.content_region.width
        detailed = ribbon.pass_line(view, ribbon.styles_map(), width, "", True).plain
        wide = ribbon.pass_line(view, ribbon.styles_map(), 200, "", True).plain  # the whole line, untruncated
        as_model = replace(view, drafter="model", settings=replace(view.settings, drafter="model"))
        model_line = ribbon.pass_line(as_model, ribbon.styles_map(), width, "", False).plain
    assert BLOCK_LEGEND.strip() in lines[0] and 0 < width <= 80
    older = [line for line in lines[2:] if line.startswith("#") and "prefill" not in line]
    assert re.match(r"#\d+ +k=\d+ +\[[✓✗·]1:", detailed) and "]" in detailed
    assert "[" not in model_line and "]" not in model_line  # a draft model's drafts: one step each, no block
    assert wide.endswith(f"  draft 1 pass {fmt_ms(view.event.timing.draft_ms)}") and cell_len(detailed) <= width
    drafted = [line for line in older if "[" in line]
    assert drafted and all(cell_len(line) <= 80 for line in lines)
    for line in drafted:
        block = line[line.index("[") + 1:line.index("]")]
        assert block and set(block) <= set("✓✗·★●"), line
        assert to_ascii(line).count("[") == 1 and to_ascii(line).count("]") == 1
    assert "one a pass, the whole block" in metrics


def test_a_draft_model_run_is_not_priced_as_a_block(make_engine, tiny_target, tiny_draft_noisy):
    from spectui.analysis.cost.block_cost import block_drafted
    from spectui.analysis.stats import compute

    with make_engine(tiny_target, tiny_draft_noisy) as e:
        snap = compute(_run(e, Settings(draft_max=3, drafter="model"), 16))
    assert snap.n_drafted > 0 and not block_drafted(snap)


@pytest.mark.slow  # a CLI run and its replay
@pytest.mark.parametrize("kind", KINDS)
def test_headless_summary_says_one_draft_step_a_block_and_replays(pairs, tmp_path, kind):
    """Detected from the draft's header (llama.cpp's rule), the run's summary names the block drafter and its
    step: one draft pass per drafting pass; the trace replays with the same words."""
    t, dr = _files(pairs[30.0], kind)
    trace = tmp_path / f"{kind}.trace"
    r = subprocess.run([sys.executable, "-m", "spectui", "--target", t, "--draft", dr, "--headless", "-n", "24", "-p",
                        PROMPT, "--no-probe", "-k", "5", "--record", str(trace)], capture_output=True, text=True,
                       timeout=300, cwd=ROOT)
    assert r.returncode == 0, r.stderr
    name = {"dflash": "DFlash", "dspark": "DSpark"}[kind]
    assert f"drafter                {kind} (a {name} block drafter on the target's hidden states" in r.stdout
    assert f"draft step cost        {name} " in r.stdout and "per draft step (one a pass, the whole block)" in r.stdout
    rp = subprocess.run([sys.executable, "-m", "spectui", "replay", str(trace), "--headless"], capture_output=True,
                        text=True, timeout=300, cwd=ROOT)
    assert rp.returncode == 0, rp.stderr
    assert "per draft step (one a pass, the whole block)" in rp.stdout


def test_a_dspark_draft_without_confidence_head_refuses_p_min(pairs, tmp_path):
    """As llama.cpp ("DSpark draft has no confidence head: please set --spec-draft-p-min 0"): without the head, a
    p_min > 0 is refused in one line; at 0 the draft drafts."""
    sys.path.insert(0, str(ROOT / "benchmarks"))
    import make_block_models

    from spectui.engine.drafters.base import DraftLimits
    from spectui.engine.drafters.block import BlockDrafter
    from spectui.engine.drafters.block_head import BlockHead
    from spectui.engine.llama.models import LoadedModel

    t_path, weights = make_block_models.build_block_target(tmp_path / "t.gguf")
    d_path = make_block_models.build_block_draft(tmp_path / "d.gguf", weights, 0.0, dspark=True, conf_head=False)
    t = LoadedModel(str(t_path), "target", 256, 1, False)
    h = BlockHead(str(d_path), t.model, t.ctx, 256, dspark=True)
    try:
        ids = t.tokenize(PROMPT)
        t.decode(ids, 0, "last")
        drafter = BlockDrafter("dspark", h)
        drafter.target_decoded(ids, 0)
        ctx = ids + [int(np.argmax(t.logits_last()))]
        assert not h.has_conf and len(drafter.propose(ctx, DraftLimits(4), 0.0, None).ids) == 4
        with pytest.raises(SpectuiError) as exc:
            drafter.propose(ctx, DraftLimits(4, p_min=0.5), 0.0, None)
        assert "no confidence head" in str(exc.value) and "\n" not in str(exc.value)
    finally:
        h.close()
        t.close()


@pytest.mark.parametrize("kind", KINDS)
def test_probe_measures_the_block_as_one_draft_pass(pairs, kind):
    """``spectui probe --drafter dflash | dspark``: the block drafter's step is its whole propose of k (one draft
    decode), not that divided by k; the line says so."""
    from spectui.analysis.measured.head_cost import measure, render

    with _engine(pairs[30.0], kind) as e:
        head = e.parts().head.head
        before = head.n_runs
        c = measure(e, k=8, repeats=3)
        assert head.n_runs - before == 4  # the warm-up and 3 timed proposals: one draft decode each
    name = {"dflash": "DFlash", "dspark": "DSpark"}[kind]
    assert f"{name} block ({kind}), 1 draft pass of 8" in render(c)
    assert c.head_step_ms > 0


@pytest.mark.slow  # three CLI commands
def test_bench_sweep_and_race_draft_with_a_block_drafter(pairs):
    """The draft's header makes it the drafter in every command (llama.cpp's -md convention): bench, sweep and
    race run with it and exit 0, and the greedy outputs match the target alone's where the command checks."""
    t, dr = _files(pairs[30.0], "dspark")

    def cli(*args):
        r = subprocess.run([sys.executable, "-m", "spectui", *args, "--target", t, "--draft", dr, "--json"],
                           capture_output=True, text=True, timeout=600, cwd=ROOT)
        assert r.returncode == 0, (args, r.stderr[-2000:])
        return json.loads(r.stdout)

    bench = cli("bench", "-n", "16", "-k", "4", "--temp", "0")
    assert bench["params"]["drafters"] == ["dspark"] and bench["params"]["head"] == dr
    sweep = cli("sweep", "-n", "16", "-k", "2,4", "--temp", "0")
    assert sweep["params"]["drafter"] == "dspark"
    race = cli("race", "-n", "24", "-p", PROMPT)
    assert race["same_tokens"] and race["lanes"][1]["drafted"] > 0 and "dspark" in race["lanes"][1]["label"]
