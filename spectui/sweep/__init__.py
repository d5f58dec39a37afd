"""``spectui sweep``: the draft-length x temperature exercise in one command.

Runs every (k, temperature) combination plus the target-only baseline (drafter "none", same prompt,
same seed) at each temperature, ``--repeat`` times, with ONE loaded engine; then prints a table, a
terminal chart of tokens/s against acceptance rate, and a report written from the measured numbers.
``--json`` prints one object (every run and every cell), ``--csv`` one line per run. Every statistic
comes from :func:`spectui.analysis.stats.compute` over the run's events; spread is the standard deviation over
repeats. Speedup is a run's tokens/s over the baseline's of the same temperature and repeat.

One module per step, each importing only the ones above it (the table and the text chart are
``spectui.text.sweep``, the click command ``spectui.commands.sweep``):

    plan.py       parse --draft-max / --temp, the runs to do and their order, the baseline's name and label
    aggregate.py  SweepRun (one measured run) -> Cell (its repeats pooled, with spread and speedup)
    runner.py     run the plan on one loaded engine (traces optional); verify times measured on demand
    report.py     the report lines and the cost model's prediction
    export.py     --csv and --json
"""

from .aggregate import Cell, Spread, SweepRun, aggregate, baseline_tps, pool_confidence, speedups
from .export import CONFIDENCE_FIELDS, CSV_FIELDS, run_record, to_csv, to_json
from .plan import BASELINE, TARGET_ONLY, Plan, make_plan, parse_ks, parse_temps, run_label
from .report import confidence_lines, report_lines, sweep_prediction
from .runner import measure_missing_verify, run_sweep

__all__ = [
    "BASELINE", "CONFIDENCE_FIELDS", "CSV_FIELDS", "TARGET_ONLY", "Cell", "Plan", "Spread",
    "SweepRun", "aggregate", "baseline_tps", "confidence_lines", "make_plan", "measure_missing_verify", "parse_ks",
    "parse_temps", "pool_confidence", "report_lines", "run_label", "run_record",
    "run_sweep", "speedups", "sweep_prediction", "to_csv", "to_json",
]
