"""HelpScreen: the key table and what the colours and glyphs mean."""

from __future__ import annotations

from rich.text import Text

from ..shared.help_screen import CLOSE_HINT, INSPECT_KEYS, LEGEND, HelpPage, face_keys, key_lines

LIVE_KEYS = [
    ("↑ / +", "draft length k + 1"),
    ("↓ / -", "draft length k - 1 (0 = speculation off)"),
    ("→ / t", "temperature + 0.1 (max 2)"),
    ("← / T", "temperature - 0.1 (min 0)"),
    ("a", "auto k on/off (cost model)"),
    ("] / [", "--draft-p-min up / down (0 = off, .5 .. .95)"),
    ("d", "cycle drafter: model / head (eagle3, mtp) / ngram / none"),
    ("o", "--pipeline on/off: draft the next block while the target verifies (⇉ drafted ahead, ✂ thrown)"),
    ("space / p", "pause / resume"),
    ("r", "restart with the same prompt"),
    ("n", "new prompt"),
]
REPLAY_KEYS = [
    ("space / p", "pause / resume the replay"),
    ("→ / ←", "step one pass forward / back (pauses)"),
    ("home / end", "jump to start / end"),
    ("> / <", "faster / slower (0.25x .. 8x, max)"),
    ("r", "restart from the beginning"),
]
COMMON_KEYS = [
    ("b", "80x24: acceptance by position / by confidence"),
    ("s", "save the trace so far (spectui-trace-*.jsonl)"),
    *face_keys("stops the engine, flushes the trace"),
]


def help_text(replay: bool) -> Text:
    t = Text()
    t.append("spectui keys\n\n", "bold")
    key_lines(t, (REPLAY_KEYS if replay else LIVE_KEYS) + INSPECT_KEYS + COMMON_KEYS)
    t.append("\ntoken styles (colour is never the only cue)\n\n", "bold")
    key_lines(t, LEGEND, width=16)
    t.append("\nA key takes effect at the engine's next pass; the status line shows it at once.\n", "dim")
    t.append(CLOSE_HINT, "dim")
    return t


class HelpScreen(HelpPage):
    """The run face's keys (live or replay) and its token styles."""

    def __init__(self, replay: bool = False) -> None:
        super().__init__(help_text(replay))
        self.replay = replay
