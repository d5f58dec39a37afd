"""The ASCII face: with --ascii, or when the locale's encoding is not UTF-8, everything a face writes is ASCII
(box drawing, sparklines, glyphs), each character as wide as the one it stands for, and the token glyphs keep
their meaning by shape (accepted +, rejected x, the target's @ and *, plain o), not only by colour. In a
real pty (tests/pty_term.py), every byte the terminal receives is checked."""

from __future__ import annotations

import re
import sys
from pathlib import Path

import pytest
from rich.cells import cell_len

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
import waits  # noqa: E402
from pty_term import PtyProcess  # noqa: E402

from spectui.tui.shared.ascii import _TABLE, KEY_WORDS, ascii_wanted, encoding_is_utf8, key_names, to_ascii  # noqa: E402
from spectui.tui.shared.panel import GLYPH  # noqa: E402


def test_every_character_keeps_its_width_and_the_glyphs_stay_distinct():
    for ch, out in _TABLE.items():
        assert out.isascii() and cell_len(out) == cell_len(ch) == 1, ch
    assert to_ascii("猫 ok") == "?? ok"  # another script: one ? per cell
    marks = [to_ascii(g) for g in GLYPH.values()]
    assert len(set(marks)) == len(marks)  # accepted, rejected, discarded, pending, correction, bonus, plain
    assert to_ascii("╭─ k=8 ─╮│✓✗·●★○⏎…") == "+- k=8 -+|+x.@*o~~"
    assert to_ascii("\x1b[1;2Hplain") == "\x1b[1;2Hplain"


@pytest.mark.parametrize("env,wanted", [
    ({}, False), ({"LANG": "en_US.UTF-8"}, False), ({"LANG": "C"}, True), ({"LANG": "en_US.ISO-8859-1"}, True),
    ({"LC_ALL": "C", "LANG": "en_US.UTF-8"}, True), ({"LC_CTYPE": "de_DE.utf8", "LANG": "C"}, False),
    ({"LC_CTYPE": "C.UTF-8", "LANG": "C"}, True),  # Python's coercion of LANG=C (PEP 538) seen through
    ({"SPECTUI_ASCII": "1", "LANG": "en_US.UTF-8"}, True), ({"SPECTUI_ASCII": "0", "LANG": "C"}, False),
])
def test_when_the_ascii_face_is_wanted(env, wanted):
    assert ascii_wanted(env) is wanted
    assert encoding_is_utf8(env) is (not wanted) or "SPECTUI_ASCII" in env


PASS_ROW = re.compile(r"#(\d+) +k=")  # a pass in the ribbon: "#12 k=2  ..."


def _passes_drawn(p: PtyProcess) -> int:
    return max((int(n) for n in PASS_ROW.findall(p.text())), default=0)


def _screen(args, env, needles=("spectui demo: ",), passes=0):
    """The demo in a real pty until every needle is on the screen and ``passes`` passes are in its ribbon
    (passes, sparklines, the ribbon drawn): waits on what was drawn, not on a clock."""
    p = PtyProcess(args, cols=120, rows=36, env=env)
    try:
        for needle in needles:
            p.wait_for(needle, 60)
        waits.wait_until(lambda: _passes_drawn(p) >= passes, 60, f"{passes} passes in the ribbon")
        raw, text = p.raw(), p.text()
        p.send("q")
        assert p.wait(20) == 0
        return raw, text
    finally:
        p.close()


ASCII_LEGEND = "accepted + rejected x target @/* pending ? k=0 o"
SLOW = pytest.mark.slow  # the fast lane: --ascii
ASCII_ENVS = [(["--ascii"], {"LANG": "en_US.UTF-8"}),
              pytest.param([], {"LANG": "C", "LC_ALL": "", "LC_CTYPE": ""}, marks=SLOW),
              pytest.param([], {"LANG": "en_US.ISO-8859-1", "LC_ALL": "", "LC_CTYPE": ""}, marks=SLOW)]


@pytest.mark.parametrize("flags,env", ASCII_ENVS, ids=["--ascii", "LANG=C", "latin-1"])
def test_the_demo_writes_only_ascii(flags, env):
    raw, text = _screen(["demo", "--act", "1", "--speed", "8", *flags], env, (ASCII_LEGEND, "+-"), passes=20)
    assert raw.isascii(), sorted({c for c in raw if not c.isascii()})
    assert ASCII_LEGEND in text  # the legend: shapes, not only colours
    assert "+-" in text and "|" in text  # the panels' borders


def test_the_race_act_writes_only_ascii():
    raw, text = _screen(["demo", "--act", "3", "--speed", "max", "--ascii"], {}, ("FINISH",))
    assert raw.isascii(), sorted({c for c in raw if not c.isascii()})
    assert "FINISH" in text or "on your marks" in text


def test_a_utf8_terminal_keeps_its_glyphs():
    raw, text = _screen(["demo", "--act", "1", "--speed", "8"], {"LANG": "en_US.UTF-8", "LC_ALL": "", "LC_CTYPE": ""},
                        ("accepted ✓ rejected ✗", "╭"), passes=20)
    assert "accepted ✓ rejected ✗" in text and "╭" in raw


def test_keys_named_by_an_arrow_are_words_in_the_ascii_face():
    ascii_env, utf8 = {"SPECTUI_ASCII": "1"}, {"LANG": "en_US.UTF-8"}
    assert key_names("→", ascii_env) == "right" and key_names("←/→ step", ascii_env) == "left/right step"
    assert key_names("←→ token ↑↓ pass", ascii_env) == "left/right token up/down pass"
    assert key_names("→ / t", utf8) == "→ / t"  # a UTF-8 terminal keeps its arrows
    for _glyph, word in KEY_WORDS:
        assert ">" not in word and "<" not in word  # never the faster / slower keys' characters


FOOTER = re.compile(r"(\S+) (\S*step\S*|faster|slower)")  # a footer key and what it does


def test_the_ascii_footer_names_every_key_unambiguously():
    """The replay's footer (demo act 1): the step keys are the arrows, named "right" / "left"; ">" and "<"
    name only faster and slower (in ASCII an arrow drawn as a glyph became ">" / "<" too)."""
    raw, text = _screen(["demo", "--act", "1", "--speed", "8", "--ascii"], {}, ("right step", "> faster"))
    keys = {what: key for key, what in FOOTER.findall(text) if what in ("step>", "<step", "faster", "slower")}
    assert keys == {"step>": "right", "<step": "left", "faster": ">", "slower": "<"}, keys
    assert "left/right step" in text  # the replay banner names them the same way
