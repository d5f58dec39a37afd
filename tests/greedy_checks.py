"""Greedy-losslessness checks shared by the engine tests (no tests here): run with the debug hook, the
target-only reference run and its top-two logit margins, and the two assertions of
tests/engine/test_engine_greedy.py's definition of lossless.

The near-tie rule is the bench's (spectui.analysis.lossless.check): where the speculative tokens part from
the reference, the reference's margin there must be within the kernels' noise, measured on the same engine,
prompt and length (spectui.engine.probes.noise: the same tokens decoded one at a time and in verify batches of
2..NOISE_MAX_BATCH tokens). ``reference`` returns the margins as :class:`Margins`, a list that carries that
noise; a plain list of margins is judged against ``MARGIN`` (no noise measured)."""

from __future__ import annotations

import numpy as np

from spectui.analysis.lossless import UNMEASURED_MARGIN, check
from spectui.contract.control import RunControl
from spectui.contract.events import PassEvent, Settings
from spectui.engine.probes.noise import measure_noise

PROMPT = "the hash map handles collisions"
N = 80
MARGIN = UNMEASURED_MARGIN  # the near-tie threshold of margins that carry no measured noise
NOISE_MAX_BATCH = 9  # verify batches measured for the tests' noise: k = 1..8 (every k the engine tests use)


class Margins(list):
    """The reference's top-two margins, with the kernels' noise measured for its engine (``.noise``: the
    largest gap change of any verify batch of 2..NOISE_MAX_BATCH tokens; ``.measurement``: the figures)."""

    def __init__(self, margins, measurement):
        super().__init__(margins)
        self.measurement = measurement
        self.noise = max(b.max_gap for b in measurement.batches)


_noise: dict[tuple, object] = {}


def measured_noise(engine, n_predict=N, prompt=PROMPT):
    """The kernels' noise for ``engine``'s target on ``prompt`` and ``n_predict`` tokens (once per engine)."""
    key = (id(engine), engine.target_info.path, engine.threads, prompt, n_predict)
    m = _noise.get(key)
    if m is None:
        m = _noise[key] = measure_noise(engine, range(2, NOISE_MAX_BATCH + 1), max(8, n_predict), prompt)
    return m


def run_with_hook(engine, settings, n_predict=N, prompt=PROMPT, on_pass=None, overlap=False):
    """Run to the end; returns (events, debug records). ``on_pass(control, event)`` may change settings.
    ``overlap``: Engine.run(overlap=...) (passes finished on the finishing thread where a core is spare)."""
    records = []
    engine.debug_hook = records.append
    control = RunControl(settings)
    events = []
    try:
        for ev in engine.run(prompt, control, n_predict, overlap=overlap):
            events.append(ev)
            if on_pass is not None and isinstance(ev, PassEvent):
                on_pass(control, ev)
    finally:
        engine.debug_hook = None
    return events, records


def emitted_ids(events):
    return [t.id for ev in events if isinstance(ev, PassEvent) for t in ev.emitted]


def reference(engine, n_predict=N, prompt=PROMPT):
    """Target-only greedy run through the same loop: tokens and the top-two margin of each step."""
    events, records = run_with_hook(engine, Settings(draft_max=0, drafter="none"), n_predict, prompt)
    toks = emitted_ids(events)
    margins = []
    for r in records:
        s = np.sort(r["target_logits"][0])
        margins.append(float(s[-1] - s[-2]))
    assert len(margins) == len(toks)
    return toks, Margins(margins, measured_noise(engine, n_predict, prompt))


def assert_argmax_of_verify_pass(records):
    for r in records:
        rows = r["target_logits"]
        n_acc = r["n_accepted"]
        assert rows.shape[0] == n_acc + 1
        for i in range(n_acc):
            assert r["draft_ids"][i] == int(np.argmax(rows[i])), r["index"]
        assert r["token"] == int(np.argmax(rows[n_acc])), r["index"]


def assert_lossless(spec_toks, ref_toks, margins, min_checked=30):
    """Equal to the reference, or parted from it at a near tie (margin within the measured noise); and at least
    ``min_checked`` steps compared before any parting."""
    c = check(spec_toks, ref_toks, margins, getattr(margins, "noise", MARGIN))
    assert c.equal, f"speculation changed the output: {c.describe()}"
    assert c.checked >= min_checked, f"{c.describe()}: pick another seed/prompt, the check would be vacuous"
