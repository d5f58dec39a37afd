"""The headless text faces: what a command prints when there is no TUI (``--headless``, tables, reports).

    run.py      the live run's text and summary, or its JSON (``consume``), for the run and replay
    replay.py   a recorded trace through the faces the live command printed with (replay, demo --headless)
    attach.py   ``spectui attach --headless``: one line per engine and interval, the session summary
    race.py     ``spectui race --headless``: each lane's figures, the winner and the margin
    sweep.py    ``spectui sweep``: the table and the text chart
    bench.py    ``spectui bench``: the per-category table and bar chart

No Textual here (tests/test_architecture.py checks it); each face reads events or the statistics built
from them, never the engine.
"""
