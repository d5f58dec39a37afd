"""RaceHelpScreen: the race's help page (``?``): what a lane, the race clock and the finish line mean, the
keys, and the token styles the panes share with the run face."""

from __future__ import annotations

from rich.text import Text

from ..shared.help_screen import CLOSE_HINT, INSPECT_KEYS, LEGEND, HelpPage, face_keys, key_lines

ABOUT = (
    "Each pane (a lane) replays one recorded run of the same prompt with another setting: the target alone, "
    "prompt lookup, a draft model at some k. All lanes play on one clock, each at its own recorded pace, so "
    "the text that grows fastest is the setting that decoded fastest where it was recorded."
)
PARTS = [
    ("lane header", "the lane's setting, models and machine (from its trace's header); under it the figures so "
                    "far: race time, tokens, tokens/s, acceptance (accepted / drafted tokens), tokens per pass "
                    "and TTFT, with the definitions of spectui.analysis.stats (those of vLLM and llama.cpp); "
                    "FINISHED 1st / 2nd and its time once its last token is in. ▶ marks the focused lane"),
    ("text and ribbon", "the lane's tokens as the run face draws them (styles below); the ribbon under the text "
                        "shows its newest pass: draft positions 1..k and what the target made of each"),
    ("banner", "RACE of N, its state, the race clock in seconds and the speed. The clock starts at each run's "
               "first token (the time to first token is shown, not raced); --from-start starts it at each "
               "run's start, so TTFT is raced too"),
    ("finish line", "who has finished and when; once every lane has: who finished first and by how much "
                    "(seconds and x), whether the tokens are the same (at temperature 0 they should be: greedy "
                    "speculation is lossless) or where they part, and why: per lane, tokens per pass against "
                    "what a pass costs in target-alone passes, whose quotient is the speed-up"),
]
RACE_KEYS = [
    ("space / p", "pause / resume the race clock"),
    ("→ / ←", "step one pass forward / back on the race clock (pauses)"),
    ("+ / - (> / <)", "faster / slower (0.25x .. 8x, max)"),
    ("home / end", "jump to the start / the end"),
    ("r", "restart the race from the start gun"),
    ("tab / shift+tab", "focus the next / previous lane (the inspector works in the focused lane)"),
]


def help_text() -> Text:
    t = Text()
    t.append("spectui race\n\n", "bold")
    t.append(ABOUT + "\n\n")
    for name, what in PARTS:
        t.append(f"  {name}: ", "bold").append(f"{what}\n")
    t.append("\nkeys\n\n", "bold")
    key_lines(t, RACE_KEYS + INSPECT_KEYS + face_keys(), width=16)
    t.append("\ntoken styles (colour is never the only cue)\n\n", "bold")
    key_lines(t, LEGEND, width=16)
    t.append("\n" + CLOSE_HINT, "dim")
    return t


class RaceHelpScreen(HelpPage):
    """The race face's lanes, clock, finish line, keys and token styles."""

    def __init__(self) -> None:
        super().__init__(help_text())
