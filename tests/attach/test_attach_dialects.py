"""The three dialects attach reads (issue 36): llama-server's, vLLM's and SGLang's /metrics, found by their
prefix, into the same EngineCounters and windows; SGLang's per-request figures from ``meta_info``; the
per-request outliers; acceptance by position side by side.

The pages are written as each engine writes them: llama-server's byte layout (its server-task.cpp
``to_metrics``), vLLM's and SGLang's through prometheus_client (what both use), with the names and labels of
their sources (vllm/v1/spec_decode/metrics.py; sglang/srt/metrics/collector.py). SGLang cannot be installed on
this CPU-only machine, so its responses are the ``meta_info`` its tokenizer_manager.py writes, in each of
the three namings its versions used. The real llama-server and vLLM are in test_attach_server.py,
test_attach_vllm.py and test_attach_engines_live.py.
"""

from __future__ import annotations

import pytest

pytest.importorskip("prometheus_client")

from prometheus_client import CollectorRegistry, Counter, Gauge, generate_latest

from spectui.analysis.attach_stats import HIGH, IDLE, LOW, OK, AttachStats, outlier
from spectui.attach import metrics
from spectui.attach.dialect import MAX_POSITIONS, base_name, positions_from_histogram
from spectui.attach.dialects import detect
from spectui.attach.request import _SGLangText, build_request
from spectui.attach.sglang import request_spec
from spectui.contract.events import (
    KIND_LLAMA_SERVER,
    KIND_SGLANG,
    KIND_VLLM,
    MetricsScraped,
    RequestChunk,
    RequestEnded,
    RequestStarted,
)
from spectui.text.attach import requests_lines, window_line
from spectui.views.attach_positions import FROM_COUNTERS, FROM_REQUESTS, position_columns

SGLANG_LABELS = ["model_name", "engine_type", "tp_rank", "pp_rank", "moe_ep_rank"]


def llama_page(drafts, draft_tokens, accepted, per_pos, total_suffix="_total") -> str:
    """llama-server's layout (HELP, TYPE, value); ``total_suffix=""``: a newer exporter's bare counter names."""
    out = []
    for name, value in (("spec_decode_num_draft_tokens", draft_tokens), ("spec_decode_num_accepted_tokens", accepted),
                        ("spec_decode_num_drafts", drafts), ("tokens_predicted", 100)):
        out += [f"# HELP llamacpp:{name}{total_suffix} x", f"# TYPE llamacpp:{name}{total_suffix} counter",
                f"llamacpp:{name}{total_suffix} {value}"]
    name = f"llamacpp:spec_decode_num_accepted_tokens_per_pos{total_suffix}"
    out += [f"# TYPE {name} counter"] + [f'{name}{{position="{i}"}} {c}' for i, c in enumerate(per_pos)]
    return "\n".join(out) + "\n"


def sglang_page(accept_length: float, accept_rate: float, tp_ranks=(0,), dp_rank: str | None = None) -> str:
    """SGLang's scheduler gauges (one series per tp rank when every scheduler publishes) and the tokenizer's
    generation counter, declared as collector.py declares them."""
    reg = CollectorRegistry()
    labels = SGLANG_LABELS + (["dp_rank"] if dp_rank is not None else [])
    al = Gauge("sglang:spec_accept_length", "The average acceptance length of speculative decoding.", labels,
               registry=reg)
    ar = Gauge("sglang:spec_accept_rate", "The average acceptance rate of speculative decoding.", labels,
               registry=reg)
    for tp in tp_ranks:
        lv = ["qwen", "unified", str(tp), "0", "0"] + ([dp_rank] if dp_rank is not None else [])
        al.labels(*lv).set(accept_length)
        ar.labels(*lv).set(accept_rate)
    Counter("sglang:generation_tokens", "Number of generation tokens processed.", ["model_name"],
            registry=reg).labels("qwen").inc(500)
    return generate_latest(reg).decode()


def vllm_page(drafts: int, accepted_by_pos: list[int], k: int = 3) -> str:
    reg = CollectorRegistry()
    lab = ["model_name", "engine"]
    Counter("vllm:spec_decode_num_drafts", "d", lab, registry=reg).labels("m", "0").inc(drafts)
    Counter("vllm:spec_decode_num_draft_tokens", "t", lab, registry=reg).labels("m", "0").inc(drafts * k)
    Counter("vllm:spec_decode_num_accepted_tokens", "a", lab, registry=reg).labels("m", "0").inc(sum(accepted_by_pos))
    pp = Counter("vllm:spec_decode_num_accepted_tokens_per_pos", "p", lab + ["position"], registry=reg)
    for i, c in enumerate(accepted_by_pos):
        pp.labels("m", "0", str(i)).inc(c)
    return generate_latest(reg).decode()


def scraped(url: str, text: str, t: float) -> MetricsScraped:
    p = metrics.parse(text)
    return MetricsScraped(url=url, t=t, kind=p.kind, engines=p.engines)


# ------------------------------------------------------------------------------------ detection and names


def test_each_dialect_is_found_by_its_prefix():
    assert detect(["llamacpp:tokens_predicted_total"]).kind == KIND_LLAMA_SERVER
    assert detect(["vllm:generation_tokens_total"]).kind == KIND_VLLM
    assert detect(["sglang:spec_accept_length"]).kind == KIND_SGLANG
    assert detect(["process_cpu_seconds_total", "up"]) is None
    assert base_name("llamacpp:spec_decode_num_drafts_total", "llamacpp:") == "spec_decode_num_drafts"
    assert base_name("vllm:time_to_first_token_seconds_bucket", "vllm:") == "time_to_first_token_seconds_bucket"


@pytest.mark.parametrize("suffix", ["_total", ""])
def test_llama_server_counters_with_and_without_total(suffix):
    (e,) = metrics.parse(llama_page(10, 30, 18, [8, 6, 4], suffix)).engines
    assert (e.num_drafts, e.num_draft_tokens, e.num_accepted_tokens, e.generated_tokens) == (10, 30, 18, 100)
    assert [(p.position, p.accepted) for p in e.accepted_per_pos] == [(0, 8), (1, 6), (2, 4)]


def test_sglang_gauges_read_once_per_engine_not_summed_over_tp_ranks():
    p = metrics.parse(sglang_page(2.6, 0.55, tp_ranks=(0, 1, 2, 3)))
    assert p.kind == KIND_SGLANG
    e = next(x for x in p.engines if x.accept_length >= 0)
    assert e.accept_length == pytest.approx(2.6) and e.accept_rate == pytest.approx(0.55)  # not 4 x
    assert e.speculation and e.num_drafts == -1 and e.accepted_per_pos == ()
    # with data parallelism, one engine per dp_rank
    p = metrics.parse(sglang_page(3.1, 0.7, dp_rank="1"))
    assert any(x.engine == "1" and x.accept_rate == pytest.approx(0.7) for x in p.engines)


def test_sglang_gauge_window_and_its_line():
    st = AttachStats()
    st.update(scraped("http://s:30000", sglang_page(0.0, 0.0), 0.0))
    st.update(scraped("http://s:30000", sglang_page(0.0, 0.0), 1.0))
    w = next(w for w in st.snapshot().interval if w.gauges_only)
    assert w.status == IDLE and "gauges at 0" in window_line(w)
    st.update(scraped("http://s:30000", sglang_page(2.5, 0.5), 2.0))
    w = next(w for w in st.snapshot().interval if w.gauges_only)
    assert w.status == OK and w.acceptance_rate == pytest.approx(0.5) and w.mean_acceptance_length == 2.5
    line = window_line(w)
    assert "accept 50.0% (gauge)" in line and "mean len 2.50 (gauge)" in line and "by pos: not published" in line


def test_an_impossible_gauge_reads_as_absent():
    (e, *_) = [x for x in metrics.parse(sglang_page(2.0, 7.5)).engines if x.accept_length >= 0]
    assert e.accept_rate == -1 and e.accept_length == 2.0  # a rate of 750% is not one


# ------------------------------------------------------------------------------------ position labels


@pytest.mark.parametrize("label", ["\x1b[2J", "-3", str(10**20), "1e9", "1000", "01", " 1", "", "٣",
                                   str(MAX_POSITIONS)])
def test_a_label_that_is_no_draft_position_is_refused(label):
    assert metrics.draft_position(label) is None
    text = (llama_page(4, 12, 6, [3, 2, 1])
            + f'llamacpp:spec_decode_num_accepted_tokens_per_pos_total{{position="{label}"}} 1\n')
    with pytest.raises(metrics.BadCounters, match="impossible draft position") as exc:
        metrics.parse(text)
    assert exc.value.kind == KIND_LLAMA_SERVER


def test_positions_with_a_gap_are_refused_not_closed_up():
    text = vllm_page(4, [3, 2, 1]).replace('position="2"', 'position="5"')
    with pytest.raises(metrics.BadCounters, match="position 2 missing"):
        metrics.parse(text)
    assert [metrics.draft_position(x) for x in ("0", "7", "255")] == [0, 7, 255]


# ------------------------------------------------------------------------------------ SGLang per request


META_NEWEST = {"spec_verify_ct": 5, "spec_num_correct_drafts": 8, "spec_num_proposed_drafts": 15,
               "spec_accepted_drafts": 8, "spec_proposed_drafts": 15, "spec_correct_drafts_histogram": [1, 1, 2, 1],
               "spec_accept_histogram": [1, 1, 2, 1], "spec_accept_rate": 8 / 15, "spec_accept_length": 2.4,
               "completion_tokens": 12, "prompt_tokens": 9}
META_MIDDLE = {"spec_verify_ct": 5, "spec_accepted_drafts": 8, "spec_proposed_drafts": 15,
               "spec_accept_histogram": [1, 1, 2, 1]}
META_FIRST = {"spec_verify_ct": 5, "spec_accept_token_num": 8, "spec_draft_token_num": 15,
              "spec_accept_histogram": [1, 1, 2, 1]}


@pytest.mark.parametrize("meta", [META_NEWEST, META_MIDDLE, META_FIRST])
def test_sglang_meta_info_in_each_naming(meta):
    r = request_spec(meta)  # histogram [1, 1, 2, 1]: 0 + 1 + 4 + 3 = 8 accepted in 5 steps
    assert (r.verify_steps, r.drafted, r.accepted) == (5, 15, 8)
    # histogram [1, 1, 2, 1]: position 0 accepted in 1 + 2 + 1 = 4 steps, position 1 in 3, position 2 in 1
    assert r.histogram == (1, 1, 2, 1) and r.accepted_per_pos == (4, 3, 1)
    assert sum(r.accepted_per_pos) == r.accepted  # the same accepted tokens, counted by position


@pytest.mark.parametrize("meta, why", [
    ({"spec_verify_ct": 9, "spec_accept_histogram": [1, 1, 2, 1]}, "the histogram adds up to 5 steps, not 9"),
    ({"spec_verify_ct": 5, "spec_accept_histogram": [1, -1, 2, 3]}, "a negative count"),
    ({"spec_verify_ct": 5, "spec_accept_histogram": "1,1,2,1"}, "not a list"),
    ({"spec_verify_ct": 5, "spec_accept_histogram": [1] * 1000}, "longer than any draft"),
    ({"spec_verify_ct": 5, "spec_accept_histogram": [1.5, 1, 2, 0.5]}, "not whole numbers"),
])
def test_sglang_histograms_that_cannot_be_that_request_are_dropped(meta, why):
    assert request_spec(meta).accepted_per_pos == (), why


def test_sglang_accepted_above_proposed_is_no_acceptance():
    r = request_spec({"spec_verify_ct": 2, "spec_num_correct_drafts": 9, "spec_num_proposed_drafts": 4})
    assert r.accepted == -1 and r.drafted == -1


def test_sglang_streamed_text_cumulative_and_incremental():
    cum = _SGLangText()
    assert cum.chunk({"text": "Hel", "meta_info": {"completion_tokens": 1}}) == ("Hel", 1, "")
    assert cum.chunk({"text": "Hello wor", "meta_info": {"completion_tokens": 3}}) == ("lo wor", 2, "")
    end = cum.chunk({"text": "Hello world", "meta_info": {"completion_tokens": 4, "finish_reason": {"type": "length"}}})
    assert end == ("ld", 1, "length")
    inc = _SGLangText()
    assert inc.chunk({"text": "Hel", "meta_info": {"completion_tokens": 1}})[0] == "Hel"
    assert inc.chunk({"text": "lo", "meta_info": {"completion_tokens": 2}})[0] == "lo"  # a new part only


def test_the_request_each_engine_gets():
    assert build_request(KIND_SGLANG, "hi", 8, -1)[:2] == ("generate", "/generate")
    assert build_request(KIND_SGLANG, "hi", 8, -1)[2]["sampling_params"] == {"max_new_tokens": 8, "temperature": 0.0}
    assert build_request(KIND_LLAMA_SERVER, "hi", 8, -1)[1] == "/completion"
    assert build_request(KIND_VLLM, "hi", 8, -1)[1] == "/v1/completions"
    assert positions_from_histogram([2, 0, 3]) == (3, 3)


# ------------------------------------------------------------------------------------ outliers


def test_outlier_rules():
    # reference 0.6: low under 0.3, high where it misses under (1 - 0.6) / 3 of drafts: above 0.867
    assert [outlier(x, 0.6) for x in (0.29, 0.31, 0.6, 0.86, 0.87)] == [LOW, "", "", "", HIGH]
    # whatever the reference: under 10% low, over 95% high; none without a rate
    assert outlier(0.05, None) == LOW and outlier(0.97, None) == HIGH and outlier(0.5, None) == ""
    assert outlier(None, 0.5) == ""


def request_events(url: str, drafted: int, accepted: int, steps: int = -1, per_pos=()):
    return [RequestStarted(url=url, t=0.0, prompt="p"), RequestChunk(t=0.1, text="x"),
            RequestEnded(t=0.2, n_tokens=1, draft_n=drafted, draft_n_accepted=accepted, spec_steps=steps,
                         accepted_per_pos=tuple(per_pos))]


def test_requests_are_flagged_against_their_median():
    st = AttachStats()
    for drafted, accepted in ((40, 24), (40, 26), (40, 2), (40, 39), (40, 25)):
        for ev in request_events("http://a:8080", drafted, accepted):
            st.update(ev)
    reqs = st.snapshot().requests
    assert [r.flag for r in reqs] == ["", "", LOW, HIGH, ""]  # median 0.61: 0.05 is low, 0.975 high
    assert "drafts thrown away" in reqs[2].flag_words and "copy" in reqs[3].flag_words
    text = "\n".join(requests_lines(st.snapshot()))
    assert text.count("outlier, low") == 1 and text.count("outlier, high") == 1 and "#5 request" in text


# ------------------------------------------------------------------------------------ side by side


def test_three_dialects_side_by_side_by_position():
    st = AttachStats()
    pages = {"http://l:8080": [llama_page(0, 0, 0, []), llama_page(10, 30, 18, [8, 6, 4])],
             "http://v:8000": [vllm_page(0, [0, 0, 0]), vllm_page(20, [15, 9, 3])],
             "http://s:30000": [sglang_page(2.4, 0.46), sglang_page(2.4, 0.46)]}
    for t in (0, 1):
        for url, texts in pages.items():
            st.update(scraped(url, texts[t], float(t)))
    cols = position_columns(st.snapshot())
    assert [c.label for c in cols] == ["llama", "vllm", "sglang"]
    llama, vllm, sglang = cols
    assert llama.source == vllm.source == FROM_COUNTERS
    assert llama.rates == pytest.approx((0.8, 0.6, 0.4)) and vllm.rates == pytest.approx((0.75, 0.45, 0.15))
    assert sglang.rates == () and "no per-position metric" in sglang.note
    # a request to SGLang: its histogram fills the column (4 of 5 verify steps accepted position 0, ...)
    for ev in request_events("http://s:30000", 15, 8, steps=5, per_pos=(4, 3, 1)):
        st.update(ev)
    sglang = position_columns(st.snapshot())[2]
    assert sglang.source == FROM_REQUESTS and sglang.n_requests == 1 and sglang.rates == pytest.approx((0.8, 0.6, 0.2))
