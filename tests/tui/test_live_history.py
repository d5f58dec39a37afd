"""A live TUI run without --record keeps its history on disk, not in memory: the run goes to an anonymous
temporary trace (recording.trace.TraceWriter(None)) that `s` copies, so the screen holds only its bounded
tails however long the run (issue: a 4,000-token live run's memory flat). Tiny models, a real pty."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from pty_term import PtyProcess  # noqa: E402

REPO = Path(__file__).resolve().parents[2]


def test_s_saves_the_whole_run_from_the_anonymous_trace(tiny_target, tiny_draft_noisy, tmp_path):
    p = PtyProcess(["--target", tiny_target, "--draft", tiny_draft_noisy, "-p", "the cat", "-n", "96", "-t", "1",
                    "--no-probe", "-k", "3"], cols=120, rows=36, cwd=tmp_path)
    try:
        p.wait_for("ENDED", 120)
        p.send("s")
        p.wait_for("trace saved to", 30)
        p.send("q")
        assert p.wait(60) == 0
    finally:
        p.close()
    saved = list(tmp_path.glob("spectui-trace-*.jsonl"))
    assert len(saved) == 1
    lines = [json.loads(x) for x in saved[0].read_text(encoding="utf-8").splitlines()]
    kinds = [ln.get("type") for ln in lines]
    assert kinds[1] == "start" and kinds[-1] == "end", kinds[:3] + kinds[-3:]
    end = lines[-1]
    out = subprocess.run([sys.executable, "-m", "spectui", "replay", str(saved[0]), "--headless", "--json"],
                         capture_output=True, text=True, cwd=REPO, timeout=120)
    assert out.returncode == 0, out.stderr
    summary = json.loads(out.stdout)
    # every pass the run made is in the saved trace: the replay's totals are the run's own
    assert summary["n_passes"] == end["n_passes"] > 10 and kinds.count("pass") >= end["n_passes"], end
    assert len(summary["tokens"]) == end["n_emitted"] == 96
    assert summary["stop_reason"] == "n_predict"
