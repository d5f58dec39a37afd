"""The subcommands: one module per ``spectui`` subcommand, each exporting its click command ``<name>_cmd``.

``SUMMARIES`` is the list of subcommands and each one's one-line summary, written once: ``spectui --help``
prints it without importing any command (``spectui.cli``), and each command's own ``--help`` starts with it
(``command``). A new subcommand is its module here plus its line in ``SUMMARIES``.

``run`` is the live/headless run (``spectui --target T --draft D``, its options on the group in
``spectui.cli``); ``common`` holds the model loaders every command that loads models uses, ``options`` the
click options several commands share. No command imports another (pyproject.toml's independence contract).
"""

from __future__ import annotations

import inspect

import click

SUMMARIES = {
    "replay": "Replay a recorded trace in the TUI, or --headless.",
    "cast": "Render a trace to an asciicast v2 file (no terminal needed).",
    "demo": "Replay the bundled recordings act after act, in a loop (no model needed).",
    "sweep": "Run every draft length x temperature and report when speculation pays.",
    "attach": "Watch a llama-server / vLLM / SGLang deployment's speculative decoding (/metrics, requests).",
    "probe": "Measure this machine: decode, verify cost by batch size, draft cost, and what they mean.",
    "bench": "Benchmark a pair (or a deployment) per workload category: Spec-Bench's table on your machine.",
    "race": "Race recorded runs side by side on one clock (or record two settings, then race them).",
    "serve": "Serve a spectui screen (default: the demo) to a web browser (textual-serve).",
}
CONTEXT = {"help_option_names": ["-h", "--help"]}


def command(name: str, **context):
    """A spectui command: ``click.command(name)`` whose help starts with ``SUMMARIES[name]``; the function's
    docstring, if it has one, follows as the details (so a command's docstring is its help, not Args).

    Args:
        name: the command's name (a key of ``SUMMARIES``; spectui.cli's SUBCOMMANDS names where it lives).
        context: more click context settings (``-h``/``--help`` always).

    Returns:
        The decorator.
    """

    def decorate(f):
        details = inspect.getdoc(f)
        text = SUMMARIES[name] + (f"\n\n{details}" if details else "")
        return click.command(name, help=text, short_help=SUMMARIES[name], context_settings={**CONTEXT, **context})(f)

    return decorate
