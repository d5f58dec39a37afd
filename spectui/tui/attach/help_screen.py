"""AttachHelpScreen: the attach screen's keys, what each panel means, and each engine's caveats."""

from __future__ import annotations

from rich.text import Text

from ..shared.help_screen import CLOSE_HINT, HelpPage, face_keys, key_lines

KEYS = face_keys("the session ends, a --record trace is closed readable")
PANELS = [
    ("engines", "one row per URL (and vLLM engine label), then the sum: acceptance rate, mean acceptance "
                "length, drafted and accepted tokens/s over the last interval, or the URL's state"),
    ("acceptance by position", "accepted_per_pos[i] / drafts since start: how often draft token i survives; "
                               "engines of different kinds side by side, SGLang (*) from its requests' histograms"),
    ("deployment", "last interval | since start: accept = accepted / drafted tokens; mean acc len = "
                   "1 + accepted / drafts; TTFT / ITL p50/p95 from the engines' own histograms"),
    ("tokens/s", "drafted (dim) and accepted (bright) tokens/s per interval, on one scale"),
    ("request (-p)", "the streamed text as it arrives, the server's per-request acceptance, client TTFT/ITL; "
                     "several requests one line each: low = the drafter guesses this text badly (drafts thrown "
                     "away), high = copyable text or a loop (a longer k pays)"),
]
CAVEATS = [
    "llama-server adds a request's counts when the request ends, not per token: a window without a finished "
    "request reads 'idle' even while one streams.",
    "llama-server publishes no TTFT / ITL histograms ('-'); request mode measures them on the client.",
    "Draft length: there are no k keys. This llama-server ignores a request's speculative.n_max (compiled "
    "out), vLLM has no per-request draft length: the server's own setting applies (--spec-draft-n-max, "
    "num_speculative_tokens).",
    "vLLM: per-request figures need --per-request-spec-decode-metrics summary.",
    "SGLang publishes gauges (its last batches' accept rate and length), no counters and nothing per "
    "position: shown as '(gauge)'.",
    "States: baseline (first scrape), reset (counters went back: restarted), no speculation, idle, and one "
    "line for an unreachable URL or a page that is not Prometheus text; the others keep going.",
]


def help_text() -> Text:
    t = Text()
    t.append("spectui attach\n\n", "bold")
    key_lines(t, KEYS)
    t.append("\npanels\n\n", "bold")
    for name, what in PANELS:
        t.append(f"  {name}: ", "bold").append(f"{what}\n")
    t.append("\ncaveats\n\n", "bold")
    for what in CAVEATS:
        t.append(f"  • {what}\n")
    t.append("\n" + CLOSE_HINT, "dim")
    return t


class AttachHelpScreen(HelpPage):
    """The attach face's keys, panels and each engine's caveats."""

    DEFAULT_CSS = """
    AttachHelpScreen > #help-box { max-width: 100; }
    """

    def __init__(self) -> None:
        super().__init__(help_text())
