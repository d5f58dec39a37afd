"""``spectui replay FILE``: a recorded trace fed back to the same faces as a live run.

Headless (``--headless [--json]``), :func:`spectui.text.replay.replay_headless` streams the trace into
:func:`spectui.text.run.consume`, the very function the live ``--headless`` run uses, so the text, the
summary and the JSON are those the live run printed. Without ``--headless`` the events go to the TUI
(``spectui.tui.run.app.run_replay``), marked as a replay of which models and when, at the recorded speed by
default.

An attach trace (``spectui attach --record``: its first event is ``AttachStarted``) goes to the attach
faces instead: headless to :class:`spectui.text.attach.HeadlessFace` (what the live attach printed), the
TUI to ``spectui.tui.attach.app.run_attach_replay``.

``--explain PASS[:TOKEN]`` (implies ``--headless``) prints one pass's token inspector as text
(:func:`spectui.views.inspector_model.render_pass`), or with ``--json`` that pass's event plus every token's explained
view (:func:`explain_json`, each token through :func:`spectui.views.inspector_model.view_dict`): for scripts and bug
reports. PASS is the pass index (0 = the prefill pass), TOKEN a 1-based token of that pass in the
inspector's order (its drafts, then the target's own token). A tree pass (--drafter tree) lists and explains
every node of its tree besides (:func:`spectui.views.tree_inspector.render_tree`; ``tree_nodes`` in the JSON).
"""

from __future__ import annotations

import os
import sys
from typing import Callable

import click

from ..contract.errors import SpectuiError
from ..contract.event_json import to_dict
from ..contract.events import AttachStarted, PassEvent, RunStarted
from ..contract.params import SPEED
from ..recording.player import is_attach_trace, load_for_tui, parse_speed, warn_stderr
from ..text.replay import replay_headless
from ..tui.shared.ascii import ascii_option
from . import command
from .options import json_option


def parse_explain(value: str) -> tuple[int, int | None]:
    """``PASS`` or ``PASS:TOKEN`` -> (pass index, 0-based token slot or None). TOKEN is 1-based."""
    text = value.strip()
    head, sep, tail = text.partition(":")
    try:
        index = int(head)
        token = int(tail) if sep else None
    except ValueError:
        raise SpectuiError(f"--explain takes PASS or PASS:TOKEN (integers, e.g. 12 or 12:3), not {value!r}") from None
    if index < 0:
        raise SpectuiError(f"--explain: no pass {index}; passes count from 0 (the prefill pass)")
    if token is not None and token < 1:
        raise SpectuiError(f"--explain: no token {token}; tokens of a pass count from 1")
    return index, (token - 1 if token is not None else None)


def find_pass(path: str | os.PathLike, index: int,
              on_warning: Callable[[str], None] | None = warn_stderr, starts: list | None = None) -> PassEvent:
    """The first pass numbered ``index`` in a run trace (streamed: stops reading once found); ``starts``, when
    given, collects the RunStarted events read on the way (the run's head, for the inspector's words)."""
    from ..recording.trace import iter_trace

    _header, reader = iter_trace(path, on_warning=on_warning)
    n = 0
    try:
        for i, ev in enumerate(reader):
            if i == 0 and isinstance(ev, AttachStarted):
                raise SpectuiError(f"{os.fspath(path)}: --explain needs a run trace; this is an attach trace "
                                   "(spectui attach --record), which has no passes")
            if starts is not None and isinstance(ev, RunStarted):
                starts.append(ev)
            if isinstance(ev, PassEvent):
                if ev.index == index:
                    return ev
                n += 1
    finally:
        reader.close()
    if n == 0:
        raise SpectuiError(f"{os.fspath(path)}: no pass {index}: the trace holds no passes")
    raise SpectuiError(f"{os.fspath(path)}: no pass {index}: the trace has {n} passes (0 = prefill .. {n - 1})")


def _check_token(ev: PassEvent, token: int | None, n_slots: int) -> None:
    if token is not None and token >= n_slots:
        nd = len(ev.drafts)
        what = f"{nd} draft{'' if nd == 1 else 's'}" + (", then the target's token" if ev.target is not None else "")
        raise SpectuiError(f"--explain {ev.index}:{token + 1}: pass {ev.index} has {n_slots} token"
                           f"{'' if n_slots == 1 else 's'} ({what})")


def explain_json(ev: PassEvent, token: int | None = None, head=None) -> dict:
    """The pass event's dict plus ``inspector_data`` (has it any), ``draft_stop_text`` and ``explain``: the
    explained view of every token (or of token slot ``token`` only); a tree pass's ``tree_nodes``, every node
    explained (or token ``token``'s node only)."""
    from ..views.inspector_model import draft_stop_line, explain, slots, view_dict
    from ..views.tree_inspector import chain_node, node_dict, shape

    n = len(slots(ev))
    _check_token(ev, token, n)
    which = range(n) if token is None else [token]
    d = to_dict(ev)
    d["inspector_data"] = bool(ev.inspect)
    d["draft_stop_text"] = draft_stop_line(ev)
    d["explain"] = [view_dict(explain(ev, i, head)) for i in which]
    nodes = range(len(ev.tree)) if token is None else [n for n in [chain_node(ev, token)] if n is not None]
    sh = shape(ev)
    d["tree_nodes"] = [node_dict(ev, i, sh) for i in nodes]
    return d


def explain_text(ev: PassEvent, token: int | None = None, width: int = 100, head=None) -> list[str]:
    """``render_pass`` (every token) and a tree pass's every node (``render_tree``), or the header and token slot
    ``token`` alone (and its node)."""
    from ..views.inspector_model import explain, render_pass, render_view, slots
    from ..views.tree_inspector import chain_node, node_lines, render_tree

    _check_token(ev, token, len(slots(ev)))
    lines = render_pass(ev, width, head)
    if token is None:
        return [*lines, "", *render_tree(ev, width)] if ev.tree else lines
    top = lines[: lines.index("")] if "" in lines else lines
    node = chain_node(ev, token)
    return [*top, "", *render_view(explain(ev, token, head), width),
            *(["", *node_lines(ev, node, width)] if node is not None else [])]


def explain_pass(path: str | os.PathLike, spec: str, out=None, *, as_json: bool = False, width: int = 100,
                 on_warning: Callable[[str], None] | None = warn_stderr) -> PassEvent:
    """``spectui replay FILE --explain PASS[:TOKEN]``: print that pass's inspector view (text or JSON).

    Args:
        path: the trace; spec: "PASS" or "PASS:TOKEN" (``parse_explain``).
        out: where it goes (default stdout); as_json: the pass as JSON; width: the text's width.
        on_warning: told of a trace's recoverable problems (a truncated tail).

    Returns:
        The pass explained.

    Raises:
        SpectuiError: a bad spec, no such pass or token, an unreadable trace (one line).
    """
    from ..contract.text import json_text, visible

    index, token = parse_explain(spec)
    starts: list = []
    ev = find_pass(path, index, on_warning=on_warning, starts=starts)
    head = starts[-1].head if starts else None
    out = out or sys.stdout
    if as_json:
        out.write(json_text(explain_json(ev, token, head)) + "\n")  # strict; the trace's words with controls as \uXXXX
    else:
        out.write(visible("\n".join(explain_text(ev, token, width, head))) + "\n")  # the one rule for outside text
    out.flush()
    return ev


@command("replay")
@click.argument("file", type=str)
@click.option("--headless", is_flag=True, help="no TUI: print the text and the summary the live run printed")
@json_option("the live run's object")
@click.option("--speed", type=SPEED, default=None,
              help="0.25..8 or 'max' (TUI default 1 = recorded speed; headless default max)")
@click.option("--theme", type=str, default=None, help="TUI theme (see themes/)")
@ascii_option
@click.option("--explain", "explain", type=str, default=None, metavar="PASS[:TOKEN]",
              help="print why each token of pass PASS (0 = prefill) was accepted, rejected or chosen, or only "
                   "its TOKEN-th (1-based), then exit; implies --headless; with --json one JSON object")
def replay_cmd(file: str, headless: bool, as_json: bool, speed: str | None, theme: str | None,
               explain: str | None) -> None:
    import threading

    from ..contract.errors import fail
    from ..contract.exitcodes import SignalStop

    try:
        if theme is not None:  # every face refuses an unknown theme, --headless and --explain too
            from ..tui.shared.themes import check_theme

            check_theme(theme)
        if explain is not None:
            parse_explain(explain)  # a bad value fails before reading the trace
            try:
                explain_pass(file, explain, sys.stdout, as_json=as_json)
            except BrokenPipeError:
                try:
                    sys.stdout = open(os.devnull, "w")
                except OSError:
                    pass
            return
        if headless or as_json:  # --json: JSON on stdout, no TUI (docs/conventions.md)
            sp = parse_speed(speed, default=float("inf"))
            stop = threading.Event()
            with SignalStop(stop.set) as signals:  # SIGINT/TERM/HUP: the summary so far, then 128 + N
                try:
                    replay_headless(file, sys.stdout, as_json=as_json, speed=sp, stop=stop)
                except BrokenPipeError:  # | head: stop quietly
                    try:
                        sys.stdout = open(os.devnull, "w")
                    except OSError:
                        pass
            sys.exit(signals.status())
        sp = parse_speed(speed, default=1.0)
        from ..tui.shared.themes import check_theme

        check_theme(theme)  # an unknown theme fails before reading a long trace
        _header, events = load_for_tui(file)  # a bad trace is the first thing to say
        from ..tui.shared.terminal import require_terminal

        require_terminal("spectui replay")  # one line, exit 2: not a TUI drawn into a pipe
        if is_attach_trace(events):
            from ..tui.attach.app import run_attach_replay

            sys.exit(run_attach_replay(events, theme=theme, speed=sp) or 0)
        from ..tui.run.app import run_replay

        sys.exit(run_replay(events, theme=theme, speed=sp) or 0)
    except SpectuiError as exc:
        fail(str(exc))
    except KeyboardInterrupt:  # a second Ctrl+C, or one while the trace loads
        click.echo("spectui: interrupted", err=True)
        sys.exit(130)
