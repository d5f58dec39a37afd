"""EAGLE-3 and MTP models: the tiny GGUFs benchmarks/make_spec_models.py writes, what spectui reads from their
headers (spectui.engine.files.spec_kinds, as llama.cpp's common_speculative_types_from_gguf), what the real llama.cpp
reports through the staging calls (spectui.engine.llama.llama_ext), and that llama.cpp's own drivers accept them
(llama-server --spec-type draft-eagle3 / draft-mtp, when built)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import urllib.request
from pathlib import Path

import numpy as np
import pytest
import tinymodels
import tomllib

from spectui.contract.errors import SpectuiError
from spectui.engine.files import spec_kinds
from spectui.engine.llama import llama_ext
from spectui.engine.llama.llama_lib import llama

ROOT = Path(__file__).resolve().parents[2]
MAKER = ROOT / "benchmarks" / "make_spec_models.py"
FILES = ("eagle3-target.gguf", "eagle3-draft.gguf", "mtp-target.gguf")


# what make_spec_models.py writes depends on: a shared folder's key
MAKERS = (MAKER, ROOT / "benchmarks" / "make_block_models.py", ROOT / "tests" / "tinymodels.py")


def _make(out: Path, *args: str) -> Path:
    r = subprocess.run([sys.executable, str(MAKER), str(out), *args], capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr
    return out


def shared_spec(tiny_dir: Path, *args: str) -> Path:
    """``_make(DIR, *args)``'s folder, made once per test run for every module and pytest-xdist worker that asks
    with the same arguments (``tinymodels.shared_folder``, under the ``tiny_dir`` fixture's folder). Read only:
    a test that writes beside its files makes a folder of its own with ``_make``."""
    key = repr(args).encode() + b"".join(p.read_bytes() for p in MAKERS)
    return tinymodels.shared_folder(tiny_dir, "spec", key, lambda d: _make(d, *args))


@pytest.fixture(scope="module")
def spec_dir(tiny_dir) -> Path:
    return shared_spec(tiny_dir)


def _one_line(exc: pytest.ExceptionInfo) -> str:
    msg = str(exc.value)
    assert msg and "\n" not in msg
    assert exc.value.exit_code == 2
    return msg


# ---------------------------------------------------------------- the maker and the headers


def test_maker_writes_the_three_files(spec_dir):
    for name in FILES:
        p = spec_dir / name
        assert p.is_file() and 100_000 < p.stat().st_size < 2_000_000, name


def test_headers_say_which_kind(spec_dir):
    t = spec_kinds.spec_info(str(spec_dir / "eagle3-target.gguf"))
    d = spec_kinds.spec_info(str(spec_dir / "eagle3-draft.gguf"))
    m = spec_kinds.spec_info(str(spec_dir / "mtp-target.gguf"))
    assert (t.architecture, t.kind, t.n_layer, t.n_layer_nextn, t.llama_cpp_types) == ("llama", "model", 4, 0, ())
    assert (d.architecture, d.kind, d.target_layer_ids, d.target_hidden_size) == ("eagle3", "eagle3", (1, 2, 3), 64)
    assert d.llama_cpp_types == ()  # llama.cpp's rule does not detect EAGLE-3 (common/preset.cpp's TODO)
    assert (m.architecture, m.kind, m.block_count, m.n_layer_nextn, m.n_layer) == ("mimo2", "mtp", 3, 1, 2)
    assert m.llama_cpp_types == ("draft-mtp",)
    assert spec_kinds.detect_drafter(str(spec_dir / "eagle3-target.gguf"), str(spec_dir / "eagle3-draft.gguf")) \
        == "eagle3"
    # llama.cpp: an MTP-capable file given as the draft (here the target itself) means draft-mtp
    assert spec_kinds.detect_drafter(str(spec_dir / "mtp-target.gguf"), str(spec_dir / "mtp-target.gguf")) == "mtp"
    assert spec_kinds.detect_drafter(str(spec_dir / "mtp-target.gguf"), None) is None
    assert spec_kinds.detect_drafter(str(spec_dir / "eagle3-target.gguf"), str(spec_dir / "eagle3-target.gguf")) \
        == "model"


def test_header_reader_agrees_with_gguf(spec_dir):
    """The bounded reader sees the metadata and tensor names gguf's own reader sees."""
    import gguf

    for name in FILES:
        path = spec_dir / name
        h = spec_kinds.read_header(str(path))
        r = gguf.GGUFReader(str(path))
        assert h.tensor_names == {t.name for t in r.tensors}
        for key, f in r.fields.items():
            if key.startswith("GGUF."):
                continue
            if f.types[0] == gguf.GGUFValueType.ARRAY:
                if f.types[-1] != gguf.GGUFValueType.STRING and len(f.data) <= spec_kinds.MAX_SMALL_ARRAY:
                    assert h.metadata[key] == list(f.contents()), key
                continue
            assert h.metadata[key] == f.contents(), key


def test_drafter_refusals_are_one_line(spec_dir, tiny_dir):
    target, draft, mtp = (str(spec_dir / n) for n in FILES)
    ti = spec_kinds.spec_info(target)
    assert spec_kinds.check_eagle3_draft(draft, ti).target_layer_ids == (1, 2, 3)
    assert spec_kinds.check_mtp_target(mtp).n_layer_nextn == 1
    with pytest.raises(SpectuiError) as e:
        spec_kinds.check_eagle3_draft(target)
    assert "--drafter eagle3 needs an EAGLE-3 head" in _one_line(e) and "'llama' model" in _one_line(e)
    with pytest.raises(SpectuiError) as e:
        spec_kinds.check_eagle3_draft(mtp)
    assert "try --drafter mtp" in _one_line(e)
    for not_mtp in (target, draft):
        with pytest.raises(SpectuiError) as e:
            spec_kinds.check_mtp_target(not_mtp)
        assert "--drafter mtp needs a target with MTP (NextN) layers" in _one_line(e)
    # a head that reads a layer the target lacks
    other = shared_spec(tiny_dir, "--eagle3-layers", "0,1,5")  # the target has ids 0..4
    assert spec_kinds.spec_info(str(other / "eagle3-draft.gguf")).target_layer_ids == (0, 1, 5)
    with pytest.raises(SpectuiError) as e:
        spec_kinds.check_eagle3_draft(str(other / "eagle3-draft.gguf"), ti)
    assert "reads target layers [0, 1, 5]" in _one_line(e)


def test_header_reader_is_bounded(spec_dir, tmp_path):
    src = (spec_dir / "eagle3-draft.gguf").read_bytes()
    cases = {
        "not-gguf.gguf": b"NOPE" + src[4:100],
        "truncated.gguf": src[:2000],  # inside the token list
        "empty.gguf": b"",
        # the first key's length claims 2**40 bytes
        "huge-string.gguf": src[:24] + (1 << 40).to_bytes(8, "little") + src[32:4096],
        "bad-version.gguf": src[:4] + (99).to_bytes(4, "little") + src[8:4096],
    }
    for name, data in cases.items():
        p = tmp_path / name
        p.write_bytes(data)
        with pytest.raises(SpectuiError) as e:
            spec_kinds.spec_info(str(p))
        assert str(p) in _one_line(e), name
    with pytest.raises(SpectuiError) as e:
        spec_kinds.spec_info(str(tmp_path / "absent.gguf"))
    _one_line(e)


def test_a_string_in_the_token_list_claiming_too_much_is_refused(spec_dir, tmp_path):
    src = (spec_dir / "eagle3-draft.gguf").read_bytes()
    key = b"tokenizer.ggml.tokens"
    at = src.index(key) + len(key)  # then: value type, element type (u32 each), count (u64), the first string
    assert int.from_bytes(src[at:at + 4], "little") == 9 and int.from_bytes(src[at + 4:at + 8], "little") == 8
    second = at + 16 + 8 + int.from_bytes(src[at + 16:at + 24], "little")  # the second string's length
    p = tmp_path / "huge-token.gguf"
    p.write_bytes(src[:second] + (1 << 40).to_bytes(8, "little") + src[second + 8:])
    with pytest.raises(SpectuiError) as e:
        spec_kinds.read_header(str(p))
    assert str(p) in _one_line(e) and "string of 1099511627776 bytes" in _one_line(e)


def test_a_header_is_read_again_only_when_its_file_changed(spec_dir, tmp_path):
    p = tmp_path / "model.gguf"
    p.write_bytes((spec_dir / "eagle3-draft.gguf").read_bytes())
    first = spec_kinds.read_header(str(p))
    assert spec_kinds.read_header(str(p)) is first  # unchanged: the same header, not read again
    p.write_bytes((spec_dir / "mtp-target.gguf").read_bytes())  # the same path, another model
    again = spec_kinds.read_header(str(p))
    assert again is not first and again.tensor_names == spec_kinds.read_header(str(spec_dir / "mtp-target.gguf")
                                                                                ).tensor_names
    assert again.tensor_names != first.tensor_names


# ---------------------------------------------------------------- llama.cpp through the staging calls


def test_version_pin_matches_pyproject_and_refuses_others():
    pins = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["optional-dependencies"]["live"]
    assert f"llama-cpp-python=={llama_ext.PINNED_LLAMA_CPP_PYTHON}" in pins
    llama_ext.check_version(llama_ext.PINNED_LLAMA_CPP_PYTHON)
    for other in ("0.3.35", "0.3.37", None):
        with pytest.raises(SpectuiError) as e:
            llama_ext.check_version(other)
        msg = _one_line(e)
        assert f"llama-cpp-python {other or 'unknown'}" in msg and "==0.3.36" in msg


class _Loaded:
    """A model and one context through the bindings (the staging calls take their pointers)."""

    def __init__(self, path: Path, load_mtp: bool = False, n_ctx: int = 128) -> None:
        L = llama()
        mp = L.llama_model_default_params()
        mp.load_mtp = load_mtp
        self.model = L.llama_model_load_from_file(str(path).encode(), mp)
        assert self.model, path
        self.ctxs = []
        self.ctx = self.context()

    def context(self, ctx_type: int = llama_ext.CONTEXT_TYPE_DEFAULT, other=None):
        L = llama()
        cp = L.llama_context_default_params()
        cp.n_ctx, cp.n_batch, cp.n_ubatch, cp.n_seq_max = 128, 64, 64, 1
        cp.n_threads = cp.n_threads_batch = 1
        cp.ctx_type = ctx_type
        if other is not None:
            cp.ctx_other = other
        c = L.llama_init_from_model(self.model, cp)
        if c:
            self.ctxs.append(c)
        return c

    def decode(self, ids: list[int], logits_all: bool = True) -> None:
        L = llama()
        b = L.llama_batch_init(len(ids), 0, 1)
        try:
            for i, t in enumerate(ids):
                b.token[i], b.pos[i], b.n_seq_id[i], b.logits[i] = t, i, 1, int(logits_all or i == len(ids) - 1)
                b.seq_id[i][0] = 0
            b.n_tokens = len(ids)
            assert L.llama_decode(self.ctx, b) == 0
        finally:
            L.llama_batch_free(b)

    def close(self) -> None:
        L = llama()
        for c in self.ctxs:
            L.llama_free(c)
        L.llama_model_free(self.model)


@pytest.fixture
def loaded():
    made: list[_Loaded] = []

    def load(path, **kw):
        m = _Loaded(path, **kw)
        made.append(m)
        return m

    yield load
    for m in made:
        m.close()


def test_target_layer_ids_read_back_as_written(spec_dir, tiny_dir, loaded):
    x = llama_ext.ext()
    assert x.target_layer_ids(loaded(spec_dir / "eagle3-draft.gguf").model) == [1, 2, 3]
    other = shared_spec(tiny_dir, "--eagle3-layers", "2,0,1")
    assert x.target_layer_ids(loaded(other / "eagle3-draft.gguf").model) == [2, 0, 1]
    assert x.target_layer_ids(loaded(spec_dir / "eagle3-target.gguf").model) == []  # not a head


def test_n_layer_nextn_as_written(spec_dir, loaded):
    x = llama_ext.ext()
    L = llama()
    m = loaded(spec_dir / "mtp-target.gguf", load_mtp=True)
    assert x.n_layer_nextn(m.model) == 1 and L.llama_model_n_layer(m.model) == 2
    assert x.n_embd_out(m.model) == 64
    assert x.n_layer_nextn(loaded(spec_dir / "eagle3-target.gguf").model) == 0
    # an MTP context against the target (as common_speculative_init_result makes it for draft-mtp)
    mtp_ctx = m.context(llama_ext.CONTEXT_TYPE_MTP)
    assert mtp_ctx
    x.set_nextn_layer_offset(mtp_ctx, 0)
    # llama.cpp refuses an MTP context on a model without NextN blocks (returns NULL, as llama-server reports)
    assert not loaded(spec_dir / "eagle3-target.gguf").context(llama_ext.CONTEXT_TYPE_MTP)


def _rms(x: np.ndarray) -> np.ndarray:
    return x / np.sqrt((x.astype(np.float64) ** 2).mean(axis=-1, keepdims=True) + 1e-5)


def _weights(path: Path) -> dict[str, np.ndarray]:
    import gguf

    return {t.name: np.asarray(t.data) for t in gguf.GGUFReader(str(path)).tensors}


def _logits(m: _Loaded, n: int) -> np.ndarray:
    L = llama()
    n_vocab = L.llama_vocab_n_tokens(L.llama_model_get_vocab(m.model))
    return np.ctypeslib.as_array(L.llama_get_logits(m.ctx), shape=(n, n_vocab))


IDS = [1, 300, 301, 302, 310]


def test_target_block_inputs_are_what_eagle3_reads(spec_dir, loaded):
    """The features an EAGLE-3 head fuses, read from the real target: block inputs, one row per token; the
    input of block 0 is the token embedding."""
    x = llama_ext.ext()
    t = loaded(spec_dir / "eagle3-target.gguf")
    for lid in (0, 1, 2, 3):
        x.set_embeddings_layer_inp(t.ctx, lid, True)
    t.decode(IDS)
    n = len(IDS)
    w = _weights(spec_dir / "eagle3-target.gguf")
    rows = [x.rows(x.get_embeddings_layer_inp(t.ctx, lid), n, 64).copy() for lid in (0, 1, 2, 3)]
    with pytest.raises(RuntimeError, match="not extracted"):  # not llama.cpp's abort
        x.get_embeddings_layer_inp(t.ctx, 4)
    np.testing.assert_allclose(rows[0], w["token_embd.weight"][IDS], rtol=0, atol=1e-6)
    for a, b in zip(rows, rows[1:]):
        assert np.isfinite(b).all() and not np.allclose(a, b)


def test_llama_graph_never_fills_the_last_hidden_state(spec_dir, loaded):
    """Evidence for make_spec_models' default layer ids: llama.cpp's EAGLE-3 driver asks for id n_layer
    through llama_set_embeddings_nextn (common/speculative.cpp), but the llama graph never sets t_h_nextn
    (src/models/llama.cpp), so the buffer stays zero. If this starts failing, llama.cpp fills it."""
    x = llama_ext.ext()
    t = loaded(spec_dir / "eagle3-target.gguf")
    x.set_embeddings_nextn(t.ctx, True, False)
    t.decode(IDS)
    h = x.rows(x.get_embeddings_nextn(t.ctx), len(IDS), 64)
    assert not h.any()


def test_mtp_target_hidden_state_gives_its_logits(spec_dir, loaded):
    """The state MTP drafts from (the target's h_nextn, unmasked: a row per token): its RMS norm times the
    output matrix is the target's own logits, and the _ith getter reads the same rows."""
    x = llama_ext.ext()
    m = loaded(spec_dir / "mtp-target.gguf", load_mtp=True)
    x.set_embeddings_nextn(m.ctx, True, False)
    m.decode(IDS)
    n = len(IDS)
    h = x.rows(x.get_embeddings_nextn(m.ctx), n, 64)
    assert np.abs(h).max() > 0.1
    np.testing.assert_array_equal(x.rows(x.get_embeddings_nextn_ith(m.ctx, 3), 1, 64)[0], h[3])
    w = _weights(spec_dir / "mtp-target.gguf")
    mine = (_rms(h) * w["output_norm.weight"]) @ w["output.weight"].T
    np.testing.assert_allclose(mine, _logits(m, n), rtol=1e-3, atol=2e-3)


# ---------------------------------------------------------------- llama.cpp's own drivers accept them


def _server_completion(binary, args, log, n_predict=16):
    from servers import LlamaServer

    if "--spec-draft-n-max" not in args:
        args = [*args, "--spec-draft-n-max", "4"]
    s = LlamaServer(binary, [*args, "-c", "512", "-t", "1", "-np", "1"], log, ready_s=60)
    try:
        req = urllib.request.Request(
            s.url + "/completion", headers={"Content-Type": "application/json"},
            data=json.dumps({"prompt": "the hash map", "n_predict": n_predict, "temperature": 0,
                             "cache_prompt": False}).encode())
        with urllib.request.urlopen(req, timeout=60) as r:
            out = json.load(r)
    finally:
        s.stop()
    return out, log.read_text(errors="replace")  # after the exit: llama.cpp logs from a thread of its own


def test_llama_server_drafts_with_them(spec_dir, tmp_path):
    from servers import SKIP_REASON, llama_server_binary

    binary = llama_server_binary()
    if binary is None:
        pytest.skip(SKIP_REASON)
    d = spec_dir
    r, _ = _server_completion(binary, ["-m", str(d / "eagle3-target.gguf"), "-md", str(d / "eagle3-draft.gguf"),
                                       "--spec-type", "draft-eagle3"], tmp_path / "eagle3.log")
    assert r["timings"]["predicted_n"] == 16 and r["timings"]["draft_n"] > 0
    r, log = _server_completion(binary, ["-m", str(d / "mtp-target.gguf"), "--spec-type", "draft-mtp"],
                                tmp_path / "mtp.log")
    assert r["timings"]["predicted_n"] == 16 and r["timings"]["draft_n"] > 0
    assert "creating MTP draft context" in log
    # and it refuses a target without NextN blocks, as spectui's check does
    with pytest.raises(RuntimeError, match="failed to create MTP context"):
        _server_completion(binary, ["-m", str(d / "eagle3-target.gguf"), "--spec-type", "draft-mtp"],
                           tmp_path / "no-mtp.log")
    assert os.path.exists(tmp_path / "no-mtp.log")


# ---------------------------------------------------------------- spectui's EAGLE-3 head against llama.cpp's


def _server_drafts(log_text: str) -> tuple[list[list[tuple[int, float]]], list[int], list[int]]:
    """From llama-server's debug log (-lv 5): each draft call's top candidates (token, p), the tokens the
    target sampled after each verify, and the drafts accepted per pass."""
    import re

    calls, sampled, accepted = [], [], []
    for line in log_text.splitlines():
        m = re.search(r"draft candidate +0, pos +(\d+): +(\d+) \( *([0-9.]+)\)", line)
        if m:  # a draft call's steps are logged at pos 0, 1, ... (also the step that p_min stops)
            if int(m.group(1)) == 0:
                calls.append([])
            calls[-1].append((int(m.group(2)), float(m.group(3))))
        elif m := re.search(r"add accepted tokens: sampled=(\d+)", line):
            sampled.append(int(m.group(1)))
        elif m := re.search(r"accepted (\d+)/\d+ draft tokens", line):
            accepted.append(int(m.group(1)))
    return calls, sampled, accepted


def _spectui_loop(t, h, draft, prompt: str, n_predict: int, k: int, p_min: float = 0.0):
    """The server's greedy speculative loop (one slot) with a spectui head: draft k, verify on the target,
    keep the longest agreeing prefix, let the head see the verify batch, roll both back."""
    ids = t.tokenize(prompt)
    t.decode(ids, 0, "last")
    h.process(ids, 0)
    out = [int(np.argmax(t.logits_last()))]
    n_past, calls, sampled, accepted = len(ids), [], [], []
    while len(out) < n_predict:
        n_draft = min(k, n_predict - len(out) - 1)  # the server drafts no further than n_predict
        steps = draft(out[-1], n_past, k, p_min) if n_draft > 0 else []
        if n_draft > 0:
            calls.append([(s.token, s.p) for s in steps])
        drafts = [s.token for s in steps][:n_draft]
        batch = [out[-1], *drafts]
        t.decode(batch, n_past, "all")
        rows = t.logits_rows(len(batch))
        acc = 0
        while acc < len(drafts) and int(np.argmax(rows[acc])) == drafts[acc]:
            acc += 1
        new = [int(np.argmax(rows[i])) for i in range(acc + 1)]
        h.process(batch, n_past)
        h.accept(acc)
        t.rollback(n_past + 1 + acc)
        h.rollback(n_past + 1 + acc)
        if drafts:
            sampled.append(new[-1])
            accepted.append(acc)
        out += new
        n_past += 1 + acc
    return calls, sampled, accepted, out[:n_predict]


def _spectui_eagle3(target: Path, head_path: Path, prompt: str, n_predict: int, k: int, p_min: float = 0.0):
    from spectui.engine.drafters.eagle3 import Eagle3Head
    from spectui.engine.llama.models import LoadedModel

    t = LoadedModel(str(target), "target", 512, 1, False)
    h = Eagle3Head(str(head_path), t.model, t.ctx, 512)
    try:
        return _spectui_loop(t, h, lambda tok, pos, n, pm: h.draft(tok, n, pm), prompt, n_predict, k, p_min)
    finally:
        h.close()
        t.close()


def _spectui_mtp(target: Path, prompt: str, n_predict: int, k: int):
    from spectui.engine.drafters.mtp import MtpHead
    from spectui.engine.llama.models import LoadedModel

    t = LoadedModel(str(target), "target", 512, 1, False, load_mtp=True)
    h = MtpHead(t.model, t.ctx, 512, path=str(target))
    try:
        return _spectui_loop(t, h, h.draft, prompt, n_predict, k)
    finally:
        h.close()
        t.close()


def _compare(mine, ref_log: str, n_predict: int, k: int, r: dict, p_min: float = 0.0) -> None:
    """Pass by pass. The server logs each step's top candidate before its p_min check, so a draft that stopped
    early has one more candidate in the log than in the draft: the one below p_min."""
    ref_calls, ref_sampled, ref_accepted = _server_drafts(ref_log)
    calls, sampled, accepted, out = mine
    assert len(ref_calls) >= 3 and len(calls) == len(ref_calls)
    for m, ref in zip(calls, ref_calls):
        if len(m) < k:
            assert len(ref) == len(m) + 1 and ref[-1][1] < p_min
            ref = ref[:-1]
        assert [t for t, _ in m] == [t for t, _ in ref]
        assert [round(p, 3) for _, p in m] == pytest.approx([p for _, p in ref], abs=1.5e-3)
    if p_min == 0:
        assert all(len(c) == k for c in calls)
    assert sampled == ref_sampled
    # the server logs "accepted n/k" after each pass except the one that ends the completion (it returns first)
    assert len(ref_accepted) in (len(accepted), len(accepted) - 1) and accepted[: len(ref_accepted)] == ref_accepted
    assert r["timings"]["draft_n_accepted"] == sum(accepted)
    assert len(out) == n_predict


@pytest.mark.parametrize("p_min", [0.0, 0.3])
def test_eagle3_head_drafts_what_llama_cpp_drafts(spec_dir, tmp_path, p_min):
    """At temperature 0, spectui's EAGLE-3 head proposes, pass by pass, the tokens llama.cpp's own driver
    proposes (llama-server --spec-type draft-eagle3, its debug log), with the same probabilities; the target
    then samples the same tokens and accepts as many."""
    from servers import SKIP_REASON, llama_server_binary

    binary = llama_server_binary()
    if binary is None:
        pytest.skip(SKIP_REASON)
    d, n_predict, k = spec_dir, 16, 3
    r, log = _server_completion(
        binary, ["-m", str(d / "eagle3-target.gguf"), "-md", str(d / "eagle3-draft.gguf"), "--spec-type",
                 "draft-eagle3", "-lv", "5", "--no-spec-draft-backend-sampling", "--spec-draft-n-max", str(k),
                 "--spec-draft-p-min", str(p_min)],
        tmp_path / "eagle3-dbg.log", n_predict=n_predict)
    mine = _spectui_eagle3(d / "eagle3-target.gguf", d / "eagle3-draft.gguf", "the hash map", n_predict, k, p_min)
    _compare(mine, log, n_predict, k, r, p_min)
    if p_min:  # the threshold did cut some drafts short (else this case tests nothing more)
        assert any(len(c) < k for c in mine[0])


def test_mtp_head_drafts_what_llama_cpp_drafts(spec_dir, tmp_path):
    """The same for the target's own MTP block (llama-server --spec-type draft-mtp, no draft file)."""
    from servers import SKIP_REASON, llama_server_binary

    binary = llama_server_binary()
    if binary is None:
        pytest.skip(SKIP_REASON)
    d, n_predict, k = spec_dir, 16, 3
    r, log = _server_completion(
        binary, ["-m", str(d / "mtp-target.gguf"), "--spec-type", "draft-mtp", "-lv", "5",
                 "--no-spec-draft-backend-sampling", "--spec-draft-n-max", str(k)],
        tmp_path / "mtp-dbg.log", n_predict=n_predict)
    _compare(_spectui_mtp(d / "mtp-target.gguf", "the hash map", n_predict, k), log, n_predict, k, r)


def _greedy(target: Path, prompt: str, n_predict: int) -> list[int]:
    """Target-only greedy decoding (the output speculation must not change)."""
    from spectui.engine.llama.models import LoadedModel

    t = LoadedModel(str(target), "target", 512, 1, False)
    try:
        ids = t.tokenize(prompt)
        t.decode(ids, 0, "last")
        out = [int(np.argmax(t.logits_last()))]
        while len(out) < n_predict:
            t.decode([out[-1]], len(ids) + len(out) - 1, "last")
            out.append(int(np.argmax(t.logits_last())))
        return out
    finally:
        t.close()


@pytest.mark.parametrize("agree", [0.0, 0.5])
def test_mtp_head_accepts_what_llama_cpp_accepts(tmp_path, agree):
    """With an MTP block that agrees with its target (make_spec_models --mtp-agree: always at 0, partly at
    0.5), spectui's MtpHead drafts, pass by pass, what llama-server's draft-mtp drafts, the target accepts as
    many, and the output is the target's own greedy output."""
    from servers import SKIP_REASON, llama_server_binary

    binary = llama_server_binary()
    if binary is None:
        pytest.skip(SKIP_REASON)
    d = _make(tmp_path / "m", "--mtp-agree", str(agree))
    target, n_predict, k = d / "mtp-agree-target.gguf", 24, 3
    r, log = _server_completion(
        binary, ["-m", str(target), "--spec-type", "draft-mtp", "-lv", "5", "--no-spec-draft-backend-sampling",
                 "--spec-draft-n-max", str(k)], tmp_path / "mtp-agree.log", n_predict=n_predict)
    mine = _spectui_mtp(target, "the hash map", n_predict, k)
    _compare(mine, log, n_predict, k, r)
    accepted = mine[2]
    if agree == 0:
        assert accepted[:-1] == [k] * (len(accepted) - 1)  # every draft (the last pass is cut to n_predict)
    else:
        assert any(0 < a < k for a in accepted) and 0 in accepted
    assert sum(accepted) == r["timings"]["draft_n_accepted"] > 0
    assert mine[3] == _greedy(target, "the hash map", n_predict)


@pytest.mark.parametrize("noise", [0.0, 0.5])
def test_eagle3_head_accepts_what_llama_cpp_accepts(tmp_path, noise):
    """With a degenerate EAGLE-3 pair whose head is accepted (make_spec_models --eagle3-agree: every draft at
    0; at 0.5 the first of three), spectui's Eagle3Head drafts and accepts, pass by pass, what llama-server's
    draft-eagle3 does, and the output is the target's own greedy output."""
    from servers import SKIP_REASON, llama_server_binary

    binary = llama_server_binary()
    if binary is None:
        pytest.skip(SKIP_REASON)
    d = _make(tmp_path / "m", "--eagle3-agree", str(noise))
    target, head, n_predict, k = d / "eagle3-agree-target.gguf", d / "eagle3-agree-draft.gguf", 24, 3
    r, log = _server_completion(
        binary, ["-m", str(target), "-md", str(head), "--spec-type", "draft-eagle3", "-lv", "5",
                 "--no-spec-draft-backend-sampling", "--spec-draft-n-max", str(k)], tmp_path / "e3-agree.log",
        n_predict=n_predict)
    mine = _spectui_eagle3(target, head, "the hash map", n_predict, k)
    _compare(mine, log, n_predict, k, r)
    accepted = mine[2]
    if noise == 0:
        assert accepted[:-1] == [k] * (len(accepted) - 1)
    else:
        assert all(0 < a < k for a in accepted)
    assert sum(accepted) == r["timings"]["draft_n_accepted"] > 0
    assert mine[3] == _greedy(target, "the hash map", n_predict)


def test_heads_refuse_what_they_cannot_draft_with(spec_dir, tiny_dir, tmp_path):
    """The drafter classes refuse in one line (exit 2) what llama.cpp would abort on or refuse."""
    from spectui.engine.drafters.eagle3 import Eagle3Head
    from spectui.engine.drafters.mtp import MtpHead
    from spectui.engine.llama.models import LoadedModel

    sys.path.insert(0, str(ROOT / "benchmarks"))
    import make_spec_models

    wide = make_spec_models.build_eagle3_draft(tmp_path / "wide.gguf", n_embd_target=128)
    with pytest.raises(SpectuiError) as e:
        spec_kinds.check_eagle3_draft(str(wide), spec_kinds.spec_info(str(spec_dir / "eagle3-target.gguf")))
    assert "expects a target of width 128" in _one_line(e)
    bad = shared_spec(tiny_dir, "--eagle3-layers", "0,1,5") / "eagle3-draft.gguf"
    t = LoadedModel(str(spec_dir / "eagle3-target.gguf"), "target", 256, 1, False)
    try:
        with pytest.raises(SpectuiError) as e:
            Eagle3Head(str(bad), t.model, t.ctx, 256)
        assert "reads target layers [0, 1, 5]" in _one_line(e)
        with pytest.raises(SpectuiError) as e:  # not a head: no target layers
            Eagle3Head(str(spec_dir / "mtp-target.gguf"), t.model, t.ctx, 256)
        assert "draft model is not eagle3 (expected 3 extract layers, got 0)" in _one_line(e)
        with pytest.raises(SpectuiError) as e:
            MtpHead(t.model, t.ctx, 256, path="eagle3-target.gguf")
        assert "needs a target with MTP (NextN) layers" in _one_line(e)
    finally:
        t.close()
