"""``spectui attach``: what spectui observes of a serving engine's speculative decoding (llama-server, vLLM,
SGLang).

The attach events (observations) are in ``spectui.contract.events``; here ``metrics.py`` (Prometheus text ->
counters), ``scraper.py`` and ``request.py`` (the HTTP producers) and ``urls.py`` (the URLs' checks). The
statistics are ``spectui.analysis.attach_stats``, the headless face ``spectui.text.attach``, the command
(``AttachSession``, ``attach_cmd``) ``spectui.commands.attach``, the TUI face ``spectui.tui.attach``, which
the command imports only to open it. Nothing here imports Textual.
"""
