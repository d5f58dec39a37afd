"""Shared pytest fixtures: tiny GGUF models built once per test session (see tests/tinymodels.py).

- ``tiny_target``: the target (seed 0, end-of-sequence never the argmax, so runs have length).
- ``tiny_draft_same``: identical weights => every draft accepted at temperature 0.
- ``tiny_draft_noisy``: the target's weights plus noise => partial acceptance (about 50-65% at k = 2).
- ``tiny_other_vocab``: same shapes, one token text different (id 300) => vocabulary mismatch.
- ``tiny_eog_target``: a target whose end-of-sequence row is large, so greedy runs end on it.
- ``tiny_chat_target``: ``tiny_target``'s weights with a chat template (``tinymodels.CHAT_TEMPLATE``).
All are ``pathlib.Path`` objects, built once per test run: one folder (``tiny_dir``) for the whole run, shared
by every pytest-xdist worker (``tinymodels.shared_model``: a file lock, an atomic rename). ``tiny_model(filename,
**build_model_kwargs)`` gets any other model the same way; ``tinymodels.build_model`` builds one where a test says.

Engines (real llama.cpp on those models):
- ``make_engine(target, draft=None, n_ctx=512, threads=1, warn=<silent>, **kw)``: the one place tests build
  an ``Engine``; every engine it made is closed when the test module ends (``with make_engine(...)``
  closes one earlier).
- ``noisy_engine``: ``make_engine(tiny_target, tiny_draft_noisy)``, one per test module.

Processes: a ``waits.Started`` process a test left running (a wait that timed out) is killed after the test.
The fast lane is ``pytest -m "not slow" -n auto`` (pytest-xdist: one worker per core); what it leaves out:
``pytest_collection_modifyitems`` below.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import Callable

import pytest

# Bytecode is written during the tests even where the environment says not to (PYTHONDONTWRITEBYTECODE, set on
# the machines CI runs on): without it every worker compiled and assertion-rewrote every test module again
# (about 9 of a worker's 12 s of collection), and every `python -m spectui` a test starts (hundreds) compiled
# the package from source. The files go to the __pycache__ folders git ignores; each is written atomically.
sys.dont_write_bytecode = False
os.environ.pop("PYTHONDONTWRITEBYTECODE", None)

# Under pytest-xdist the workers' llama.cpp processes share the cores, and OpenMP's spinning threads then hold a
# core the thread they wait for needs: passes collapse (a Qwen-pair test took 29 s in one whole-suite run and 99 s
# in the next, by what ran beside it). Every worker, and every process its tests start, waits sleeping: what
# spectui chooses by itself when the cores are busy at launch (spectui.engine.llama.omp), set here because a
# worker loads llama.cpp once, whatever the load is then. A policy set by whoever runs the tests is kept; the tests
# of spectui's own choice give their processes an environment of their own (tests/engine/test_omp.py).
if os.environ.get("PYTEST_XDIST_WORKER") and not os.environ.get("OMP_WAIT_POLICY"):
    os.environ["OMP_WAIT_POLICY"] = "PASSIVE"
    os.environ["SPECTUI_TESTS_SET_OMP"] = "1"  # so that a vLLM server keeps its own default (tests/vllm_server.py)

sys.path.insert(0, str(Path(__file__).resolve().parent))

import tinymodels  # noqa: E402
import waits  # noqa: E402

pytest_plugins = ["tmux_pane", "run_alone"]  # pane_factory for every test file; `timing` tests alone under xdist

TARGET_SEED = 0
NOISY_DRAFT_NOISE = 0.1


def pytest_configure(config) -> None:
    """Under xdist, the controller compiles the package once before its workers start (a fresh clone has no
    bytecode: each worker, and the first processes each started, would compile it again)."""
    if getattr(config.option, "numprocesses", None) and not hasattr(config, "workerinput"):
        import compileall  # noqa: PLC0415

        compileall.compile_dir(str(Path(__file__).resolve().parent.parent / "spectui"), quiet=1)


@pytest.fixture(scope="session")
def tiny_dir(tmp_path_factory) -> Path:
    """One folder per test run: under pytest-xdist each worker's basetemp is a subfolder of the run's."""
    base = tmp_path_factory.getbasetemp()
    run = base.parent if os.environ.get("PYTEST_XDIST_WORKER") else base
    return run / "tinymodels"


@pytest.fixture(scope="session")
def tiny_model(tiny_dir) -> Callable[..., Path]:
    """``tiny_model(filename, **build_model_kwargs) -> Path``: built once per run (``tinymodels.shared_model``)."""
    return lambda filename, **kw: tinymodels.shared_model(tiny_dir, filename, **kw)


@pytest.fixture(scope="session")
def tiny_target(tiny_model) -> Path:
    return tiny_model("target.gguf", seed=TARGET_SEED, name="tiny-target")


@pytest.fixture(scope="session")
def tiny_draft_same(tiny_model) -> Path:
    return tiny_model("draft-same.gguf", seed=TARGET_SEED, name="tiny-draft-same")


@pytest.fixture(scope="session")
def tiny_draft_noisy(tiny_model) -> Path:
    return tiny_model("draft-noisy.gguf", seed=TARGET_SEED, noise=NOISY_DRAFT_NOISE, name="tiny-draft-noisy")


@pytest.fixture(scope="session")
def tiny_other_vocab(tiny_model) -> Path:
    return tiny_model("other-vocab.gguf", seed=TARGET_SEED, vocab=tinymodels.other_vocab(), name="tiny-other-vocab")


@pytest.fixture(scope="session")
def tiny_eog_target(tiny_model) -> Path:
    return tiny_model("eog-target.gguf", seed=TARGET_SEED, eos_logit="often", name="tiny-eog")


@pytest.fixture(scope="session")
def tiny_chat_target(tiny_model) -> Path:
    return tiny_model("chat-target.gguf", seed=TARGET_SEED, name="tiny-chat", chat_template=tinymodels.CHAT_TEMPLATE)


@pytest.fixture(autouse=True)
def _no_process_left():
    yield
    waits.kill_left_running()


def _silent(message: str) -> None:
    pass


@pytest.fixture(scope="module")
def make_engine():
    from spectui.analysis.cost.draft_policy import PolicyByMode  # noqa: PLC0415
    from spectui.engine import Engine  # noqa: PLC0415 - loads llama.cpp: only for tests that need an engine

    made = []

    def make(target, draft=None, *, n_ctx: int = 512, threads: int | None = 1,
             warn: Callable[[str], None] = _silent, **kw) -> Engine:
        kw.setdefault("draft_policy", PolicyByMode)  # --draft-max auto / schedule, as spectui.commands.common builds it
        engine = Engine(str(target), str(draft) if draft else None, n_ctx=n_ctx, threads=threads, warn=warn, **kw)
        made.append(engine)
        return engine

    yield make
    for engine in made:
        engine.close()


@pytest.fixture(scope="module")
def noisy_engine(make_engine, tiny_target, tiny_draft_noisy):
    return make_engine(tiny_target, tiny_draft_noisy)


SOAKS = "test_soak.py"  # minutes of a face by design (tests/tui/test_soak.py)


def pytest_collection_modifyitems(config, items):
    """The fast lane (`pytest -m "not slow"`) leaves out, besides what is marked slow by hand, every test
    on the real Qwen pair (`qwen`), every test in a real terminal (tmux: the pane_factory fixture) and
    every soak (a test in a file named ``SOAKS``)."""
    for item in items:
        if (item.get_closest_marker("qwen") is not None or "pane_factory" in getattr(item, "fixturenames", ())
                or item.path.name == SOAKS):
            item.add_marker(pytest.mark.slow)
