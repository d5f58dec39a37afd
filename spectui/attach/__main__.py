"""``python -m spectui.attach URL ...`` runs ``spectui attach`` (until cli.SUBCOMMANDS lists it)."""

from .cli import attach_cmd

if __name__ == "__main__":
    attach_cmd(prog_name="spectui attach")
