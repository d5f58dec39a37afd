"""The tree's options on the command line (docs/trees.md): llama-speculative's ``-np N`` is its own option (never
``-n p``) and, with ``--draft-p-split`` or SGLang's long options, makes a draft model draft trees; the trace and
``replay --json`` carry the trees; a value out of range is one line, exit 2, before any model loads."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from spectui.contract.events import PassEvent
from spectui.recording.trace import read_trace

ROOT = Path(__file__).resolve().parents[2]


def _spectui(*args, timeout=120):
    return subprocess.run([sys.executable, "-m", "spectui", *map(str, args)], capture_output=True, text=True,
                          cwd=ROOT, timeout=timeout)


def test_np_drafts_trees_and_the_trace_keeps_them(tiny_target, tiny_draft_noisy, tmp_path):
    trace = tmp_path / "tree.jsonl"
    r = _spectui("-m", tiny_target, "-md", tiny_draft_noisy, "-np", "3", "-k", "5", "--headless", "-p",
                 "the hash map", "-n", "24", "-t", "1", "--record", trace)
    assert r.returncode == 0, r.stderr
    assert "tree nodes per pass" in r.stdout and "acceptance by depth" in r.stdout
    passes = [ev for ev in read_trace(trace).events if isinstance(ev, PassEvent) and ev.tree]
    assert passes and all(p.settings.drafter == "tree" for p in passes)
    for p in passes:  # -np 3: at most three leaves
        assert sum(1 for i in range(len(p.tree)) if all(nd.parent != i for nd in p.tree)) <= 3
    replayed = _spectui("replay", "--json", trace, timeout=60)
    assert replayed.returncode == 0, replayed.stderr
    tree = json.loads(replayed.stdout)["tree"]
    assert tree["passes"] == len(passes) and tree["nodes"] == sum(len(p.tree) for p in passes)


def test_sglang_options_and_np_one(tiny_target, tiny_draft_noisy, tmp_path):
    trace = tmp_path / "sglang.jsonl"
    r = _spectui("-m", tiny_target, "-md", tiny_draft_noisy, "--spec-eagle-topk", "2", "--spec-num-steps", "3",
                 "--spec-num-draft-tokens", "6", "-k", "8", "--headless", "-p", "the hash map", "-n", "24", "-t", "1",
                 "--record", trace)
    assert r.returncode == 0, r.stderr
    passes = [ev for ev in read_trace(trace).events if isinstance(ev, PassEvent) and ev.tree]
    assert passes and max(len(p.tree) for p in passes) <= 5  # 6 tokens verified: the root and 5 nodes
    one = tmp_path / "one.jsonl"
    r = _spectui("-m", tiny_target, "-md", tiny_draft_noisy, "-np", "1", "--headless", "-p", "the hash map", "-n",
                 "8", "-t", "1", "--record", one)
    assert r.returncode == 0, r.stderr  # -np 1 alone: a chain, as llama-speculative
    assert all(not ev.tree and ev.settings.drafter == "model" for ev in read_trace(one).events
               if isinstance(ev, PassEvent))


def test_bad_tree_option_is_one_line_before_loading(tiny_target):
    for bad in (["-np", "0"], ["-np", "p"], ["--spec-eagle-topk", "99"], ["--draft-p-split", "2"]):
        r = _spectui("-m", tiny_target, "--headless", "-n", "2", *bad, timeout=60)
        assert r.returncode == 2, (bad, r.stderr)
        assert r.stderr.count("\n") == 1 and r.stderr.startswith(f"spectui: error: Invalid value for '{bad[0]}'"), (
            bad, r.stderr)
