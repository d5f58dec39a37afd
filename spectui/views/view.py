"""ScreenView: what one frame shows, computed once and handed to every widget. No Textual here.

The app builds a view from the latest ScreenSnapshot, the animation phase, the settings the UI asked
for (RunControl), the run state, the replay position and the theme. The cost model's prediction
(``prediction_for``) is computed by the paint that refreshes the statistics (at most every
``STATS_INTERVAL_S``; at once at the run's end or a full repaint: spectui.tui.shared.paced_app), not by every
paint: the others carry the last one over. Widgets draw only what their view holds and never reach into the
app. Also the text helpers the replay banner, the metrics panel and ``spectui cast`` share: model names and
where each model runs.
"""

from __future__ import annotations

import datetime as _dt
from dataclasses import dataclass

from ..analysis.cost.costmodel import Prediction, predict
from ..contract.draft_length import K_MAX
from ..contract.events import ModelInfo, RunStarted, Settings
from ..contract.text import model_label
from .animation import SETTLED
from .state import ScreenSnapshot


@dataclass(frozen=True)
class ReplayPosition:
    speed: float  # inf = as fast as possible
    cursor: int  # events delivered
    length: int  # events in the recording
    start: RunStarted | None = None  # the recording's start event: which models, when (the banner)


@dataclass(frozen=True)
class InspectCursor:
    """The token inspector's cursor: token ``slot`` (``spectui.views.inspector_model.slots`` order: the drafts, then the
    target's own token) of pass ``pass_index``."""

    pass_index: int
    slot: int


@dataclass(frozen=True)
class ScreenView:
    snap: ScreenSnapshot | None = None
    phase: str = SETTLED  # animation phase of the newest pass
    asked: Settings | None = None  # what the UI asked for (RunControl); a pass may not have used it yet
    run_state: tuple[str, str] = ("IDLE", "blue")  # (label, colour) of the status badge
    replay: ReplayPosition | None = None  # None: a live run
    theme: str = ""
    prediction: Prediction | None = None  # None: see prediction_note
    prediction_note: str = "predicted tokens/s by k: measuring from this run (each pass times a verify)…"
    prediction_error: bool = False  # the note is a cost-model error, not a wait
    inspect: InspectCursor | None = None  # inspect mode: the ribbon's cursor (None: not inspecting)

    @property
    def auto(self) -> str | None:
        return self.asked.auto if self.asked is not None else None

    @property
    def machine(self) -> str:
        """The probed figures of the machine that ran the run (``RunStarted.probe``; "" when none was
        measured: --no-probe, or a trace recorded without it); `spectui probe` says what they mean."""
        start = self.snap.start if self.snap is not None else None
        return start.probe.summary if start is not None and start.probe is not None else ""


def prediction_for(snap: ScreenSnapshot | None, current_k: int | None) -> tuple[Prediction | None, str, bool]:
    """(prediction, note, is_error): the cost model on this snapshot's statistics."""
    if snap is None or snap.stats.n_passes == 0:
        return None, ScreenView.prediction_note, False
    probe = snap.start.probe if snap.start is not None else None  # the hardware's verify curve
    try:
        return predict(snap.stats, k_max=K_MAX, current_k=current_k, curve=probe.curve if probe else None), "", False
    except Exception as exc:  # noqa: BLE001 - a model error must not take the UI down
        return None, f"cost model error: {exc}", True


def model_name(info: ModelInfo | None) -> str:
    """A model as its metadata names it, then its file type: "Qwen2.5 Coder 0.5B Instruct Q4_K_M"
    (``contract.text.model_label``)."""
    if info is None:
        return "no draft model"
    return model_label(info.name, info.quantization, info.path)


def banner_text(start: RunStarted | None) -> str:
    if start is None:
        return "REPLAY"
    when = "?"
    if start.started_at:
        when = _dt.datetime.fromtimestamp(start.started_at, _dt.timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
    return f"REPLAY of {model_name(start.target)} / {model_name(start.draft)}, recorded {when}"
