"""spectui.views.animation (the pass animation's clock, no Textual) and spectui.views.view (one frozen view per
paint: where models run, the contention warning on the status line, the prediction computed once)."""

from __future__ import annotations

import dataclasses
import subprocess
import sys

import pytest

from spectui.contract.events import ModelInfo
from spectui.recording.synthetic import sample_events
from spectui.tui.run.status_line import status_text
from spectui.views.animation import (
    FAST_GAP_S,
    PENDING,
    PENDING_S,
    SETTLED,
    VERDICT,
    VERDICT_S,
    PassClock,
    next_change,
    phase_at,
    phase_steps,
)
from spectui.views.placement import models_where, where
from spectui.views.state import ScreenState
from spectui.views.view import ScreenView, prediction_for


def test_phase_at_walks_pending_verdict_settled():
    assert [phase_at(a) for a in (0.0, PENDING_S - 1e-6, PENDING_S, VERDICT_S - 1e-6, VERDICT_S, 60)] == [
        PENDING, PENDING, VERDICT, VERDICT, SETTLED, SETTLED]
    assert phase_at(0.0, has_drafts=False) == SETTLED
    assert next_change(0.0) == pytest.approx(PENDING_S)
    assert next_change(PENDING_S + 0.1) == pytest.approx(VERDICT_S - PENDING_S - 0.1)
    assert next_change(VERDICT_S) is None and next_change(0.0, has_drafts=False) is None


def test_phase_steps_fit_the_gap_to_the_next_pass():
    assert phase_steps(False, 1.0) == [(0.0, SETTLED)]
    assert phase_steps(True, 10.0) == [(0.0, PENDING), (PENDING_S, VERDICT), (VERDICT_S, SETTLED)]
    (_, p), (t1, v), (t2, s) = phase_steps(True, 0.3)
    assert (p, v, s) == (PENDING, VERDICT, SETTLED) and t1 == pytest.approx(0.1) and t2 == pytest.approx(0.2)
    assert phase_steps(True, None)[-1] == (VERDICT_S, SETTLED)


def test_pass_clock_asks_for_frames_only_while_a_pass_animates():
    clock = PassClock()
    assert clock.phase(0.0) == SETTLED and clock.next_change(0.0) is None  # nothing yet: no frame
    a, b, c = object(), object(), object()
    assert clock.arrive(a, True, 10.0) and not clock.arrive(a, True, 10.5)  # the same pass again
    assert clock.phase(10.0) == PENDING and clock.next_change(10.0) == pytest.approx(PENDING_S)
    assert clock.phase(10.0 + PENDING_S + 1e-9) == VERDICT
    assert clock.phase(10.0 + VERDICT_S) == SETTLED and clock.next_change(10.0 + VERDICT_S) is None
    clock.arrive(b, True, 20.0)
    clock.arrive(c, True, 20.0 + FAST_GAP_S / 2)  # passes in quick succession skip the pending phase
    assert clock.phase(20.0 + FAST_GAP_S / 2) == VERDICT
    for now in (1.1, 1764470000.37, 0.3):  # whatever the clock's magnitude: no pending frame for a fast pass
        fast = PassClock()
        fast.arrive(a, True, now - 0.1)
        fast.arrive(b, True, now)
        assert fast.phase(now) == VERDICT
    late = PassClock()  # a pass that arrives slowly but with unseen passes before it (the frames are slower)
    late.arrive(a, True, 40.0)
    late.arrive(b, True, 40.0 + 2 * FAST_GAP_S, skipped=True)
    assert late.phase(40.0 + 2 * FAST_GAP_S) == VERDICT
    late.arrive(c, True, 40.0 + 4 * FAST_GAP_S)  # the very next pass, slowly: its drafts are shown pending
    assert late.phase(40.0 + 4 * FAST_GAP_S) == PENDING
    clock.arrive(object(), False, 30.0)  # a pass without drafts is settled at once
    assert clock.phase(30.0) == SETTLED and clock.next_change(30.0) is None
    frozen = PassClock(freeze=VERDICT)
    frozen.arrive(a, True, 0.0)
    assert frozen.phase(100.0) == VERDICT and frozen.next_change(0.0) is None


def test_where_each_model_runs():
    assert where(None) == "" and where(ModelInfo(path="x")) == ""  # older traces did not record it
    assert where(ModelInfo(path="x", backend="CPU", n_layer=28)) == "CPU"
    # a 27-layer model wholly offloaded: llama.cpp offloads 28 units (the layers and the output layer) and
    # the engine records that count in n_gpu_layers (see spectui/views/placement.py)
    gpu = ModelInfo(path="x", backend="CUDA", device="NVIDIA H200", n_layer=27, n_gpu_layers=28)
    assert where(gpu) == "CUDA 28/28 layers" and where(gpu, short=True) == "CUDA 28/28"
    start = sample_events()[0]
    both = dataclasses.replace(start, target=gpu, draft=dataclasses.replace(gpu, n_layer=23, n_gpu_layers=24))
    assert models_where(both) == "target CUDA 28/28 layers · draft CUDA 24/24 layers"
    assert models_where(both, short=True) == "CUDA 28/28 + CUDA 24/24"
    assert models_where(dataclasses.replace(both, draft=None)) == "target CUDA 28/28 layers"


def test_status_line_shows_contention_first():
    state = ScreenState()
    for ev in sample_events(20, ended=False):
        state.feed(ev)
    snap = state.snapshot()
    view = ScreenView(snap=snap, asked=snap.settings, run_state=("RUNNING", "green"), theme="dark")
    assert "⚠" not in status_text(view).plain
    busy = "other processes used 1.4 of 2 cores in the last passes: tokens/s is not this machine's best"
    snap = dataclasses.replace(snap, stats=dataclasses.replace(snap.stats, contention=busy, others_cpu=1.4))
    text = status_text(dataclasses.replace(view, snap=snap)).plain
    assert text.startswith(" RUNNING  ⚠ contention ")  # a badge first; the ContentionBar holds the sentence
    assert " k " in text and "pass 20" in text


def test_prediction_is_computed_once_per_view_from_the_snapshot():
    state = ScreenState()
    assert prediction_for(state.snapshot(), 2)[0] is None  # no decode passes yet: a note instead
    for ev in sample_events(20, ended=False):
        state.feed(ev)
    pred, note, error = prediction_for(state.snapshot(), 2)
    assert pred is not None and note == "" and not error
    assert len(pred.tps_by_k) == 17 and pred.current_k == 2


def test_animation_view_and_state_do_not_import_textual():
    code = ("import sys, spectui.views.animation, spectui.views.view, spectui.views.state; "
            "print(sorted(m for m in sys.modules if m.split('.')[0] == 'textual'))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"
