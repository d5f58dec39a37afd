"""``spectui bench``: does speculation pay for *my* workload? Spec-Bench's per-category table for a pair on this
machine (or for a deployment, ``--url``).

One module per step, each importing only the ones above it (the terminal table and bar chart are
``spectui.text.bench``, the click command ``spectui.commands.bench``):

    datasets.py   prompt sets: Spec-Bench JSONL, SPEED-Bench Parquet, text, the built-in set; --categories etc.
    plan.py       the settings (drafter x k x temperature, plus the baseline) and the ABBA order of the jobs
    aggregate.py  BenchRow (one measured turn) -> Summary per category and setting (Spec-Bench's numbers)
    runner.py     the jobs on one loaded engine, chat template applied, traces optional
    report.py     the sentences: best setting per category and why (break-even acceptance), equality, faults
    export.py     --csv, --json, --markdown (Spec-Bench's table shape)
    server.py     the same prompts against llama-server / vLLM (--url), rows from what the server says
"""
