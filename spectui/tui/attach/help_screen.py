"""AttachHelpScreen: the attach screen's keys, what each panel means, and each engine's caveats."""

from __future__ import annotations

from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import VerticalScroll
from textual.screen import ModalScreen
from textual.widgets import Static

KEYS = [
    ("c", "cycle theme"),
    ("? / h / f1", "this help"),
    ("q / ctrl+c", "quit (the session ends, a --record trace is closed readable)"),
]
PANELS = [
    ("engines", "one row per URL (and vLLM engine label), then the sum: acceptance rate, mean acceptance "
                "length, drafted and accepted tokens/s over the last interval, or the URL's state"),
    ("acceptance by position", "accepted_per_pos[i] / drafts since start: how often draft token i survives"),
    ("deployment", "last interval | since start: accept = accepted / drafted tokens; mean acc len = "
                   "1 + accepted / drafts; TTFT / ITL p50/p95 from the engines' own histograms"),
    ("tokens/s", "drafted (dim) and accepted (bright) tokens/s per interval, on one scale"),
    ("request (-p)", "the streamed text as it arrives, the server's per-request acceptance, client TTFT/ITL"),
]
CAVEATS = [
    "llama-server adds a request's counts when the request ends, not per token: a window without a finished "
    "request reads 'idle' even while one streams.",
    "llama-server publishes no TTFT / ITL histograms ('-'); request mode measures them on the client.",
    "Draft length: there are no k keys. This llama-server ignores a request's speculative.n_max (compiled "
    "out), vLLM has no per-request draft length: the server's own setting applies (--spec-draft-n-max, "
    "num_speculative_tokens).",
    "vLLM: per-request figures need --per-request-spec-decode-metrics summary.",
    "States: baseline (first scrape), reset (counters went back: restarted), no speculation, idle, and one "
    "line for an unreachable URL or a page that is not Prometheus text; the others keep going.",
]


def help_text() -> Text:
    t = Text()
    t.append("spectui attach\n\n", "bold")
    for key, what in KEYS:
        t.append(f"  {key:<12}", "bold").append(f"{what}\n")
    t.append("\npanels\n\n", "bold")
    for name, what in PANELS:
        t.append(f"  {name}: ", "bold").append(f"{what}\n")
    t.append("\ncaveats\n\n", "bold")
    for what in CAVEATS:
        t.append(f"  • {what}\n")
    t.append("\nescape / q / ? closes this screen.", "dim")
    return t


class AttachHelpScreen(ModalScreen[None]):
    DEFAULT_CSS = """
    AttachHelpScreen { align: center middle; }
    AttachHelpScreen > VerticalScroll { width: 90%; max-width: 100; height: 90%; border: round $primary;
        background: $surface; padding: 0 1; }
    """
    BINDINGS = [Binding("escape,q,question_mark,h,f1", "close", "close")]

    def compose(self) -> ComposeResult:
        with VerticalScroll():
            yield Static(help_text(), id="help-text")

    def action_close(self) -> None:
        self.dismiss(None)
