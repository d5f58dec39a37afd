"""``spectui attach``: what spectui observes of a serving engine's speculative decoding (llama-server, vLLM,
SGLang).

The attach events (observations) are in ``spectui.contract.events``; here ``metrics.py`` (Prometheus text ->
counters), ``scraper.py`` and ``request.py`` (the HTTP producers), ``urls.py`` (the URLs' checks) and
``session.py`` (``AttachSession``: the producers' threads, events in arrival order to one sink). The
statistics are ``spectui.analysis.attach_stats``, the headless face ``spectui.text.attach``, the command
(``attach_cmd``, the click wiring) ``spectui.commands.attach``, the TUI face ``spectui.tui.attach``, which
the command imports only to open it. Nothing here imports Textual.
"""
