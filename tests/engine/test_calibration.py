"""A run's start times one single-token decode of each model: a warm-up, then up to CALIBRATION_REPEATS timed
decodes, and no more once those add up to CALIBRATION_BUDGET_MS (spectui.engine.run.prefill). On a model whose
decode takes seconds (a 70B on a CPU, the 512-layer model of tests/tui/test_stop_mid_pass.py) the run starts
after two decodes instead of four; on a fast one the median of three is kept."""

from __future__ import annotations

import pytest

from spectui.engine.llama.models import LoadedModel
from spectui.engine.run import prefill


class Counted(LoadedModel):
    """The real model, its decodes counted."""

    decodes = 0

    def decode(self, *args, **kwargs):
        self.decodes += 1
        return super().decode(*args, **kwargs)


@pytest.fixture(scope="module")
def target(tiny_target):
    m = Counted(str(tiny_target), "target", n_ctx=64, threads=1, use_extra_bufts=False)
    yield m
    m.close()


@pytest.mark.parametrize(("budget", "decodes"), [(float("inf"), 1 + prefill.CALIBRATION_REPEATS), (0.0, 2)])
def test_calibration_stops_at_its_budget(target, budget, decodes):
    target.decodes = 0
    ms = prefill.single_decode_ms(target, 1, 0, budget_ms=budget)
    assert target.decodes == decodes and ms > 0
    target.decode([1], 0, "last")  # every calibration decode was rolled back: position 0 is free again
    target.rollback(0)


def test_a_run_start_on_a_fast_model_keeps_the_median_of_three(target):
    """The tiny model decodes in well under CALIBRATION_BUDGET_MS / 3: all three timed decodes are made."""
    target.decodes = 0
    prefill.single_decode_ms(target, 1, 0, budget_ms=prefill.CALIBRATION_BUDGET_MS)
    assert target.decodes == 1 + prefill.CALIBRATION_REPEATS


def test_a_runs_start_calibrates_within_the_budget(make_engine, tiny_target, tiny_draft_noisy, monkeypatch):
    """A real run's RunStarted is timed with CALIBRATION_BUDGET_MS, for both models."""
    from spectui.contract.control import RunControl
    from spectui.contract.events import RunStarted, Settings

    budgets = []
    real = prefill.single_decode_ms

    def recorded(model, token, pos, repeats=prefill.CALIBRATION_REPEATS, budget_ms=float("inf")):
        budgets.append((model.role, budget_ms))
        return real(model, token, pos, repeats, budget_ms)

    monkeypatch.setattr(prefill, "single_decode_ms", recorded)
    with make_engine(tiny_target, tiny_draft_noisy) as e:
        start = next(iter(e.run("the cat", RunControl(Settings(draft_max=2)), 4)))
    assert isinstance(start, RunStarted) and start.target_decode_ms > 0 and start.draft_decode_ms > 0
    assert budgets == [("target", prefill.CALIBRATION_BUDGET_MS), ("draft", prefill.CALIBRATION_BUDGET_MS)]
