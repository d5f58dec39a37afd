"""User-facing errors: one line, no traceback. The CLI prints ``spectui: error: <message>`` and exits 2."""


class SpectuiError(Exception):
    """Bad input the user can fix (missing/non-GGUF file, vocab mismatch, bad trace, unknown theme...)."""

    exit_code = 2
