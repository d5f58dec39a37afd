"""MkDocs hook (mkdocs.yml ``hooks:``): the option tables, generated from the click commands themselves.

A page that holds ``<!-- options: NAME -->`` gets NAME's table in its place (``spectui`` for the live run's
options on the group, else a subcommand's name); ``<!-- options: all -->`` gets every command's table under
its own heading (``spectui replay`` ...), so a command or an option added to the code is in the docs at the
next build, and none can be listed that the code does not have. ``<!-- drafters -->`` gets the table of every
drafter, from the drafters' own specs. tests/test_docs.py builds the site.
"""

from __future__ import annotations

import re

import click

MARKER = re.compile(r"<!--\s*options:\s*([\w-]+)\s*-->")
DRAFTERS_MARKER = re.compile(r"<!--\s*drafters\s*-->")


def _group() -> click.Group:
    from spectui.cli import main  # noqa: PLC0415 (the docs build imports the CLI only when it renders a page)

    return main


def commands() -> dict[str, click.Command]:
    """``{"spectui": the group, "replay": ..., ...}``: the group first, then the subcommands by name."""
    group = _group()
    ctx = click.Context(group, info_name="spectui")
    out: dict[str, click.Command] = {"spectui": group}
    for name in group.list_commands(ctx):
        cmd = group.get_command(ctx, name)
        if cmd is not None:
            out[name] = cmd
    return out


def _cell(text: str) -> str:
    return " ".join(str(text).split()).replace("|", "\\|").replace("<", "&lt;")


def _value(p: click.Parameter) -> str:
    if isinstance(p, click.Option) and p.is_flag:
        return ""
    if isinstance(p.type, click.Choice):
        return "|".join(str(c) for c in p.type.choices)
    describe = getattr(p.type, "_describe_range", None)  # click's IntRange / FloatRange: "1<=x<=3"
    if p.metavar is None and describe is not None:
        return describe()
    return p.metavar or p.type.name.upper()


def _default(p: click.Parameter) -> str:
    d = p.default
    if type(d).__name__ == "Sentinel":  # click >= 8.3: no default given
        return ""
    if d is None or callable(d) or (isinstance(p, click.Option) and p.is_flag and not d):
        return ""
    if isinstance(p, click.Option) and p.is_flag and d is True and p.secondary_opts:
        return p.opts[0]
    if isinstance(d, (list, tuple)):
        return ", ".join(str(x) for x in d) if d else ""
    return str(d)


def option_names(cmd: click.Command) -> list[str]:
    """Every spelling of every option of ``cmd`` (``--chat`` and ``--no-chat`` both), in the table's order."""
    names: list[str] = []
    for p in cmd.params:
        if isinstance(p, click.Option):
            names += list(p.opts) + list(p.secondary_opts)
    return names


def table(name: str, cmd: click.Command) -> str:
    rows = ["| option | value | default | meaning |", "|---|---|---|---|"]
    args = [p for p in cmd.params if isinstance(p, click.Argument)]
    for p in cmd.params:
        if isinstance(p, click.Argument):
            continue
        spellings = ", ".join(f"`{o}`" for o in list(p.opts) + list(p.secondary_opts))
        value = _value(p)
        value = f"`{' '.join(value.split())}`" if value else ""  # a code span: its pipes are not cell breaks
        default = f"`{_default(p)}`" if _default(p) else ""
        rows.append(f"| {spellings} | {value} | {default} | "
                    f"{_cell(getattr(p, 'help', None) or '')} |")
    usage = ("spectui" if name == "spectui" else f"spectui {name}") + " [OPTIONS]"
    if args:
        usage += " " + " ".join(a.make_metavar(click.Context(cmd)) if _metavar_takes_ctx() else a.make_metavar()
                                for a in args)
    summary = (cmd.help or "").strip().split("\n\n")[0].replace("\n", " ").replace("\b", "").strip()
    head = f"`{usage}`" + (f": {summary}" if summary else "")
    return head + "\n\n" + "\n".join(rows) + "\n"


def _metavar_takes_ctx() -> bool:
    import inspect  # noqa: PLC0415

    return "ctx" in inspect.signature(click.Parameter.make_metavar).parameters


def render(name: str) -> str:
    cmds = commands()
    if name == "all":
        return "\n".join(f"## {'spectui' if n == 'spectui' else 'spectui ' + n}\n\n{table(n, c)}"
                         for n, c in cmds.items())
    if name not in cmds:
        raise ValueError(f"<!-- options: {name} -->: no such command (commands: {', '.join(cmds)})")
    return table(name, cmds[name])


def drafters_table() -> str:
    """Every drafter, as it describes itself (``spectui.engine.drafters.specs()``): the table that stands for
    ``<!-- drafters -->``."""
    from spectui.engine.drafters import specs  # noqa: PLC0415

    rows = ["| --drafter | llama.cpp --spec-type | drafts from | proposes | what it does |",
            "|---|---|---|---|---|"]
    for s in specs():
        rows.append(f"| `{s.name}` | {f'`{s.spec_type}`' if s.spec_type else '(none)'} | {_cell(s.needs)} | "
                    f"{s.shape} | {_cell(s.summary)} |")
    return "\n".join(rows)


def on_page_markdown(markdown: str, page, config, files) -> str:  # noqa: ARG001 (MkDocs' hook signature)
    markdown = DRAFTERS_MARKER.sub(lambda m: drafters_table(), markdown)
    return MARKER.sub(lambda m: render(m.group(1)), markdown)
