"""``spectui attach``: watch a serving engine's speculative decoding (llama-server, vLLM, SGLang).

events.py (observations) -> metrics.py (Prometheus text -> counters) -> scraper.py / request.py
(HTTP producers) -> window.py (statistics) -> text.py (headless face) -> cli.py (``attach_cmd``).
Nothing here imports Textual.
"""
