"""Chained MTP heads (step35's rule: more than one NextN block and a KV cache of the head's own; head i drafts
position i), on the mimo2 targets ``benchmarks/make_spec_models.py --mtp-heads N`` writes:

- ``MtpHead`` drafts, pass by pass, what llama-server's ``--spec-type draft-mtp`` drafts on the same model
  (its -lv 5 log), at k = N and at k > N, where both draft N tokens per pass (llama.cpp caps its n_max at the
  number of heads);
- in spectui's loop: lossless at T = 0 on the agreeing model, the totals equal llama-server's, each draft
  records the head that drafted it, and T > 0 follows the target's law (chi-square);
- a shared-KV head (a gemma4 assistant) is refused in one line, exit 2, from its header."""

from __future__ import annotations

import subprocess
import sys
from collections import Counter
from pathlib import Path

import pytest
from in_process import both_ways
from test_engine_sampling import chi2_check, target_law
from test_spec_models import _compare, _greedy, _server_completion, _spectui_mtp, shared_spec

from spectui.contract.control import RunControl
from spectui.contract.errors import SpectuiError
from spectui.contract.events import PassEvent, RunEnded, RunStarted, Settings
from spectui.engine.loop import Engine

PROMPT = "the hash map"
N_HEADS = 3
N_PREDICT = 24


@pytest.fixture(scope="module")
def chain_dir(tiny_dir) -> Path:
    return shared_spec(tiny_dir, "--mtp-heads", str(N_HEADS), "--mtp-agree", "0.5")


def _server(tmp_path, target: Path, k: int, n_predict: int = N_PREDICT, p_min: float = 0.0):
    from servers import SKIP_REASON, llama_server_binary

    binary = llama_server_binary()
    if binary is None:
        pytest.skip(SKIP_REASON)
    return _server_completion(
        binary, ["-m", str(target), "--spec-type", "draft-mtp", "-lv", "5", "--no-spec-draft-backend-sampling",
                 "--spec-draft-n-max", str(k), "--spec-draft-p-min", str(p_min)],
        tmp_path / f"chain-{target.stem}-{k}.log", n_predict=n_predict)


def test_maker_writes_chained_heads(chain_dir):
    from spectui.engine.files.spec_kinds import spec_info

    for name in ("mtp-chain-target.gguf", "mtp-chain-agree-target.gguf"):
        info = spec_info(str(chain_dir / name))
        assert (info.kind, info.architecture, info.n_layer_nextn, info.block_count) == ("mtp", "mimo2", N_HEADS,
                                                                                         2 + N_HEADS)
    # one NextN block stays the single repeated head's file, as before
    assert spec_info(str(chain_dir / "mtp-agree-target.gguf")).n_layer_nextn == 1


@pytest.mark.parametrize("name, k", [("mtp-chain-target", N_HEADS), ("mtp-chain-agree-target", N_HEADS),
                                     ("mtp-chain-agree-target", N_HEADS + 2)])
def test_chained_heads_draft_what_llama_cpp_drafts(chain_dir, tmp_path, name, k):
    """Pass by pass, the same drafts with the same probabilities, the same samples and acceptance counts. At
    k > N llama.cpp drafts N per pass (params.n_max = min(n_max, n_mtp_layers)), and so does MtpHead."""
    target = chain_dir / f"{name}.gguf"
    r, log = _server(tmp_path, target, k)
    mine = _spectui_mtp(target, PROMPT, N_PREDICT, k)
    k_eff = min(k, N_HEADS)
    assert all(len(c) == k_eff for c in mine[0])
    _compare(mine, log, N_PREDICT, k_eff, r)
    assert mine[3] == _greedy(target, PROMPT, N_PREDICT)
    if "agree" in name:
        assert any(0 < a < k_eff for a in mine[2]) and sum(mine[2]) > 0  # accepted and rejected both ran


def _engine(target: Path) -> Engine:
    return Engine(str(target), None, n_ctx=256, threads=1, head="mtp", warn=lambda m: None)


def _emitted(evs) -> list[int]:
    return [t.id for ev in evs if isinstance(ev, PassEvent) for t in ev.emitted]


def test_chained_run_is_lossless_and_records_each_head(chain_dir):
    target = chain_dir / "mtp-chain-agree-target.gguf"
    with _engine(target) as e:
        ref = _emitted(e.run(PROMPT, RunControl(Settings(draft_max=0, drafter="none")), N_PREDICT))
        evs = list(e.run(PROMPT, RunControl(Settings(draft_max=N_HEADS + 1, drafter="mtp")), N_PREDICT))
        # overlapped (the next pass drafts while this one is finished) and switched to ngram and back mid-run
        control = RunControl(Settings(draft_max=N_HEADS, drafter="mtp"))
        over = []
        for ev in e.run(PROMPT, control, N_PREDICT, overlap=True):
            over.append(ev)
            if isinstance(ev, PassEvent) and ev.index in (3, 6):
                control.update(drafter="ngram" if ev.index == 3 else "mtp")
    assert _emitted(over) == ref and over[-1].n_accepted > 0
    assert {ev.settings.drafter for ev in over if isinstance(ev, PassEvent)} == {"mtp", "ngram"}
    start, end = evs[0], evs[-1]
    assert isinstance(start, RunStarted) and isinstance(end, RunEnded) and end.reason == "n_predict"
    assert start.head is not None and (start.head.kind, start.head.n_heads, start.head.chained) == ("mtp", N_HEADS,
                                                                                                   True)
    assert start.head.path == str(target)
    assert _emitted(evs) == ref and len(ref) == N_PREDICT
    assert 0 < end.n_accepted < end.n_drafted
    passes = [ev for ev in evs if isinstance(ev, PassEvent) and not ev.prefill and ev.drafts]
    assert passes and all(ev.k == N_HEADS + 1 for ev in passes[:3])  # k as asked, N drafted: llama.cpp's cap
    for ev in passes:
        assert ev.draft_heads == tuple(range(len(ev.drafts))) and len(ev.drafts) <= N_HEADS
    assert any(len(ev.drafts) == N_HEADS for ev in passes)


@pytest.mark.parametrize("p_min", [0.0, 0.3])
def test_chained_totals_equal_llama_server(chain_dir, tmp_path, p_min):
    target = chain_dir / "mtp-chain-agree-target.gguf"
    r, _ = _server(tmp_path, target, N_HEADS, p_min=p_min)
    with _engine(target) as e:
        evs = list(e.run(PROMPT, RunControl(Settings(draft_max=N_HEADS, drafter="mtp", draft_p_min=p_min)),
                         N_PREDICT))
    end = evs[-1]
    if p_min:
        assert any(ev.draft_stop == "p_min" for ev in evs if isinstance(ev, PassEvent))
    assert r["timings"]["predicted_n"] == N_PREDICT == end.n_emitted
    assert end.n_drafted == r["timings"]["draft_n"]
    assert end.n_accepted == r["timings"]["draft_n_accepted"] > 0


@pytest.mark.slow  # a law checked over many samples
def test_chained_sampling_matches_target_law(chain_dir):
    """At T = 1 the token a chained pass emits after the greedy first token follows the target's law."""
    runs = 600
    target = chain_dir / "mtp-chain-agree-target.gguf"
    with _engine(target) as e:
        prompt_ids = e.tokenize(PROMPT)
        second, verdicts, t0 = Counter(), Counter(), None
        for seed in range(runs):
            control = RunControl(Settings(draft_max=2, drafter="mtp", seed=seed))
            out = []
            for ev in e.run(PROMPT, control, 3):
                if isinstance(ev, PassEvent):
                    if ev.prefill:
                        control.update(temperature=1.0)
                    elif ev.index == 1:
                        verdicts.update(d.verdict for d in ev.drafts)
                        assert ev.draft_heads == tuple(range(len(ev.drafts)))
                    out += [t.id for t in ev.emitted]
            t0 = out[0] if t0 is None else t0
            assert out[0] == t0 and len(out) >= 2
            second[out[1]] += 1
    assert verdicts["accepted"] > 20 and verdicts["rejected"] > 20, verdicts
    chi2, bound = chi2_check(second, target_law(str(target), prompt_ids + [t0]), runs)
    assert chi2 < bound, (chi2, bound)


# ---------------------------------------------------------------- shared-KV heads: refused from the header


def _gemma4_assistant_header(path: Path) -> Path:
    """A header-only GGUF of a gemma4 assistant (no tensor data: the refusal reads the header only)."""
    import gguf

    w = gguf.GGUFWriter(str(path), "gemma4-assistant")
    w.add_block_count(4)
    w.add_embedding_length(64)
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.close()
    return path


def _spectui(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "spectui", *args], capture_output=True, text=True, timeout=120)


cli = both_ways(_spectui)  # exit status and lines: in this process in the fast lane (tests/in_process.py)


def test_shared_kv_head_is_refused_in_one_line(chain_dir, tmp_path, cli):
    from spectui.engine.files.spec_kinds import detect_drafter, spec_info

    head = _gemma4_assistant_header(tmp_path / "gemma4-assistant.gguf")
    target = str(chain_dir / "mtp-target.gguf")
    assert spec_info(str(head)).shared_kv
    for call in (lambda: detect_drafter(target, str(head)),
                 lambda: Engine(target, str(head), n_ctx=256, threads=1, head="mtp")):
        with pytest.raises(SpectuiError) as exc:
            call()
        msg = str(exc.value)
        assert "shares the target's KV cache" in msg and "\n" not in msg and exc.value.exit_code == 2
    for args in (["--drafter", "mtp"], []):
        r = cli("--target", target, "--draft", str(head), *args, "--headless", "-n", "4")
        assert r.returncode == 2 and "shares the target's KV cache" in r.stderr, r.stderr
        assert len(r.stderr.strip().splitlines()) == 1
