"""``python -m spectui`` is the ``spectui`` command."""

from spectui.cli import main

if __name__ == "__main__":
    main()
