"""``spectui attach``: watch a serving engine's speculative decoding (llama-server, vLLM, SGLang).

spectui/contract/events.py (the attach events: observations) -> metrics.py (Prometheus text -> counters) ->
scraper.py / request.py (HTTP producers) -> spectui/analysis/attach_stats.py (statistics) -> text.py
(headless face) -> cli.py (``AttachSession``, ``attach_cmd``). Nothing here imports Textual; the TUI face is
spectui/tui/attach/app.py, which cli.py imports only to open it.
"""
