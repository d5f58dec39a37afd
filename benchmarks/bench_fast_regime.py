"""Where speculation pays: spectui vs llama.cpp's ``llama-speculative-simple`` and llama-server's own
speculation when decode is fast, and spectui's own time outside ``llama_decode`` split by what it is.

The regime: the fast pair of benchmarks/fastpair.py (random llama, embedding 256, 2 blocks, the real
151,936-token Qwen2.5 vocabulary; the draft = the target + noise), so a target decode takes a few
milliseconds while each logit row is still 152k floats - what a GPU decode looks like to the loop.

Per repetition, for every k and temperature, the three sides run back to back in an order that rotates
(A B C, then C B A the next repetition, shifted per cell), same pair, prompt, -n, -t, -c:

- spectui: one Engine (``--inspect-top`` as given, default 5), the events consumed as a recorded headless
  run consumes them (RunStats.update + TraceWriter.write to a temporary trace, flushed per line);
  tokens/s = StatsSnapshot.tokens_per_second (tokens after the first / time after prompt eval);
- ``llama-speculative-simple`` (its "decoded N tokens ... t/s" line; same definition);
- llama-server started with -md and --spec-draft-n-max k (one server per k, kept up for the whole run;
  per-request speculative settings are disabled in this llama.cpp), one /completion request per run:
  timings.predicted_per_second.

At T > 0 both llama.cpp sides get ``--top-k 0 --top-p 1 --min-p 0`` (the server the same per request), so all
three sample the plain temperature-T distribution; their acceptance rules still differ (llama.cpp samples the
target and matches it against a top-k-10 draft, spectui accepts with min(1, p/q)), so acceptance differs and
the tokens/s ratio there is the whole loop's, rule included.

With ``--paths cpu,graph`` (the default) spectui runs twice per cell in the same rotation: ``spectui`` (today's
path: q and p softmaxed in numpy, ``--sampling cpu``) and ``spectui-graph`` (``--sampling graph``: the draft's
sample and q, and the target's p, from llama.cpp backend sampler chains in the models' graphs;
spectui/engine/run/graph_path.py), each on its own Engine over the same files, side by side in the table. ``graph-p``
adds the graph path with the target's p from its own temp + dist chain at T > 0 (a device's default; on the
CPU backend the graph path softmaxes the target's judged rows in numpy: graph_path.target_p_for).

Then, per k and temperature, one more spectui run with the profiler on (``--no-profile`` skips it): the
time outside both models' llama_decode split by category, exclusive (a category's time excludes the
categories called inside it), per pass and as a share of the run's wall time:

  logit reads            LoadedModel.logits_rows / logits_last (views over llama.cpp's buffer)
  target p (softmax)     softmax / log-sum-exp of target rows (TargetProbs), what acceptance and events read
  acceptance             greedy_verify / speculative_verify (their own work)
  top-N (inspector)      PassEventMaker._inspect with top_ids, margins, candidate texts
  events                 constructing PassEvent, Timing, Token, DraftToken, Candidate, Inspection; make,
                         _judged_drafts; token texts
  contention sample      OthersCpu.sample (/proc/stat once per pass)
  draft sampling         the draft side: DraftModelDrafter.propose's own work, softmax, sample, log-sum-exp,
                         the draft's top-N and confidence
  batch setup            filling llama_batch in Python (LoadedModel.decode minus the llama_decode call)
  KV rollback            llama_memory_seq_rm
  trace writing          TraceWriter.write (JSON encoding and the per-line flush)
  statistics             RunStats.update
  loop (rest)            everything else between two events (k choice, bookkeeping, generator hops)

The profiler wraps those functions for the profiled runs only (nothing is installed otherwise, so the
timed runs pay nothing); its own cost (about a microsecond a call) lands in the categories.

Then the heads' rows (``--no-heads`` skips them, ``--heads-only`` runs only them): an MTP and an EAGLE-3 row,
spectui's own loop (``Engine(head="mtp" | "eagle3")``, the same headless consumption) against llama-server's
own drafter (``--spec-type draft-mtp`` / ``draft-eagle3``, one server per kind and k), side by side in the
same rotating order, on the generated models of benchmarks/make_spec_models.py (their agreeing variants,
``--mtp-agree`` / ``--eagle3-agree`` 0.5, so drafts are partly accepted). ``--heads-vocab fast`` (the
default) writes them with a vocabulary of the fast pair's size, 151,936 tokens (benchmarks/fast_spec_models.py:
a synthetic SentencePiece-style vocabulary, so every logit row is 152k floats as on the fast pair);
``--heads-vocab tiny`` uses the tests' tiny vocabulary.

``--quick``: a small setting that checks the script runs (1 repetition, -n 32, k 2, T 0, no profile).

usage: .venv/bin/python benchmarks/bench_fast_regime.py [--reps 2] [--n 256] [--ks 2,4,8] [--temps 0,0.8]
       [--threads 2] [--inspect-top 5] [--paths cpu,graph[,graph-p]] [--no-server] [--no-simple] [--no-profile]
       [--profile-only] [--no-heads] [--heads-only] [--heads-vocab fast|tiny] [--quick]
"""

from __future__ import annotations

import argparse
import json
import os
import re
import statistics
import subprocess
import sys
import tempfile
import threading
import urllib.request
from collections import defaultdict
from pathlib import Path
from time import perf_counter

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "benchmarks"))
sys.path.insert(0, str(ROOT / "tests"))

from fastpair import build_fast_pair  # noqa: E402

from spectui.analysis import stats as S  # noqa: E402
from spectui.contract.control import RunControl  # noqa: E402
from spectui.contract.events import RunEnded, Settings  # noqa: E402
from spectui.contract.prompt import DEFAULT_PROMPT  # noqa: E402
from spectui.engine import Engine  # noqa: E402
from spectui.recording import trace as TR  # noqa: E402

ANCHORS = ROOT.parent / "shared" / "anchors" / "build-llama-cpp-tools.sh"
SEED = 1
# llama.cpp samples after its default chain (top-k 40, top-p 0.95, min-p 0.05); spectui samples the plain
# temperature-T distribution. Switched off, all three sides sample the same distribution at T > 0 (at T = 0
# they change nothing).
PLAIN_SAMPLING = ("--top-k", "0", "--top-p", "1.0", "--min-p", "0.0")


# ------------------------------------------------------------------------------------------ the profiler


class Profiler:
    """Exclusive time per category, by wrapping functions and methods (installed only while profiling), kept
    apart per thread: the engine's thread (the critical path: what the run waits for) and the others (the
    finishing thread of ``run(overlap=True)``, the trace writer's thread), whose work overlaps the decodes."""

    def __init__(self) -> None:
        self.acc: dict[str, float] = defaultdict(float)  # the engine's thread (the one that started the run)
        self.calls: dict[str, int] = defaultdict(int)
        self.off: dict[str, float] = defaultdict(float)  # every other thread
        self._main = threading.get_ident()
        self._local = threading.local()
        self._undo: list[tuple[object, str, object]] = []

    def _wrap(self, fn, cat: str):
        main, local = self._main, self._local
        acc, calls, off = self.acc, self.calls, self.off

        def timed(*a, **kw):
            stack = getattr(local, "stack", None)
            if stack is None:
                stack = local.stack = []
            t = perf_counter()
            stack.append(0.0)
            try:
                return fn(*a, **kw)
            finally:
                child = stack.pop()
                dt = perf_counter() - t
                if threading.get_ident() == main:
                    acc[cat] += dt - child
                    calls[cat] += 1
                else:
                    off[cat] += dt - child
                if stack:
                    stack[-1] += dt

        timed.__wrapped__ = fn
        return timed

    def patch(self, owner, name: str, cat: str) -> None:
        if not hasattr(owner, name):
            return  # a function the code no longer has (the profile map covers before and after)
        old = owner.__dict__[name] if isinstance(owner, type) and name in owner.__dict__ else getattr(owner, name)
        self._undo.append((owner, name, old))
        setattr(owner, name, self._wrap(getattr(owner, name), cat))

    def install(self) -> None:
        from spectui.contract import events as E
        from spectui.engine import cpu
        from spectui.engine.drafters import base as D
        from spectui.engine.llama import models as M
        from spectui.engine.run import eventmaker as EM
        from spectui.engine.run import finisher as F
        from spectui.engine.run import passes as P

        m = M.LoadedModel
        for name in ("logits_rows", "logits_last", "logits_row", "logits_rows_view"):
            self.patch(m, name, "logit reads")
        for name in ("rollback", "clear"):
            self.patch(m, name, "KV rollback")
        self.patch(m, "decode", "batch setup")  # minus llama_decode's own time (see split)
        for name in ("piece", "is_eog"):
            self.patch(m, name, "events")
        for name in ("__getitem__", "prob", "lse", "probs"):
            self.patch(EM.TargetProbs, name, "target p (softmax)")
        for name in ("greedy_verify", "speculative_verify"):
            self.patch(P, name, "acceptance")
        for name in ("_inspect", "_candidates", "_text"):
            self.patch(EM.PassEventMaker, name, "top-N (inspector)")
        for name in ("top_ids", "top_two_margin"):
            self.patch(EM, name, "top-N (inspector)")
        for name in ("_judged_drafts", "_tokens", "make"):
            self.patch(EM.PassEventMaker, name, "events")
        self.patch(P, "cut", "events")
        for name in ("_finish", "submit", "drain"):
            self.patch(F.Finisher, name, "events")
        for cls in (E.PassEvent, E.Timing, E.Token, E.DraftToken, E.TargetToken, E.Candidate, E.Inspection):
            self.patch(cls, "__init__", "events")
        self.patch(cpu.OthersCpu, "sample", "contention sample")
        self.patch(D.DraftModelDrafter, "propose", "draft sampling")
        for name in ("softmax", "sample", "logsumexp", "top_ids", "llama_confidence", "_finish_row"):
            self.patch(D, name, "draft sampling")
        self.patch(TR.TraceWriter, "write", "trace writing")
        self.patch(S.RunStats, "update", "statistics")

    def uninstall(self) -> None:
        while self._undo:
            owner, name, old = self._undo.pop()
            setattr(owner, name, old)


CATEGORIES = ("logit reads", "target p (softmax)", "acceptance", "top-N (inspector)", "events",
              "contention sample", "draft sampling", "batch setup", "KV rollback", "trace writing",
              "statistics", "loop (rest)")


# ------------------------------------------------------------------------------------------ spectui


def run_spectui(engine: Engine, k: int, temp: float, n: int, tmp: Path, profiler: Profiler | None = None,
                overlap: bool = True) -> dict:
    """One run consumed as ``spectui --headless --record`` consumes it: ``run(overlap=True)`` and the trace
    written on its own thread where a core is spare (spectui.commands.run), statistics on the engine's thread."""
    models = [engine.target, engine.draft]
    d0 = [m.decode_s for m in models]
    stats = S.RunStats()
    path = tmp / f"spectui-k{k}-t{temp}.jsonl"
    writer = TR.TraceWriter(path, background=overlap and engine.spare_core)
    if overlap and engine.spare_core:
        writer.gate = engine.decoding
    control = RunControl(Settings(draft_max=k, temperature=temp, drafter="model", seed=SEED))
    if profiler is not None:
        profiler.install()
    t0 = perf_counter()
    try:
        end = None
        for ev in engine.run(DEFAULT_PROMPT, control, n, overlap=overlap):
            writer.write(ev)
            stats.update(ev)
            if isinstance(ev, RunEnded):
                end = ev
        writer.flush()  # the last queued lines are part of the run
        wall = perf_counter() - t0
    finally:
        if profiler is not None:
            profiler.uninstall()
        writer.close()
    if end is None or end.reason not in ("n_predict", "eog"):
        raise SystemExit(f"spectui run ended with {getattr(end, 'reason', '?')}: {getattr(end, 'error', '')}")
    dec = [m.decode_s - a for m, a in zip(models, d0)]
    snap = stats.snapshot()
    return {"tps": snap.tokens_per_second, "acc": snap.acceptance_rate, "n_drafted": snap.n_drafted,
            "n_accept": snap.n_accepted, "wall": wall, "dec_t": dec[0], "dec_d": dec[1],
            "outside": 1.0 - sum(dec) / wall, "passes": snap.n_passes, "emitted": snap.n_emitted}


def profile_table(engine: Engine, k: int, temp: float, n: int, tmp: Path, overlap: bool = True) -> list[str]:
    prof = Profiler()
    # llama_decode's own time is measured by the models; the decode wrapper's exclusive time minus it is
    # the Python batch setup
    r = run_spectui(engine, k, temp, n, tmp, prof, overlap)
    acc = dict(prof.acc)
    inside = r["dec_t"] + r["dec_d"]
    acc["batch setup"] = acc.get("batch setup", 0.0) - inside
    known = sum(acc.values())
    acc["loop (rest)"] = r["wall"] - inside - known
    passes = max(1, r["passes"])
    how = "overlapped" if overlap and engine.spare_core else "inline"
    lines = [f"k={k} T={temp:g} ({how}): {passes} passes, {r['emitted']} tokens, wall {r['wall'] * 1000:.0f} ms; "
             f"llama_decode target {r['dec_t'] * 1000 / passes:.2f} + draft {r['dec_d'] * 1000 / passes:.2f} "
             f"ms/pass; outside both {100 * (r['wall'] - inside) / r['wall']:.2f}% "
             f"(profiled run: {r['tps']:.1f} t/s)",
             f"  {'category':20s} {'ms/pass':>8s} {'% of run':>8s} {'calls/pass':>10s} {'off-path ms/pass':>16s}"]
    for cat in CATEGORIES:
        v = acc.get(cat, 0.0)
        lines.append(f"  {cat:20s} {1000 * v / passes:8.3f} {100 * v / r['wall']:7.2f}% "
                     f"{prof.calls.get(cat, 0) / passes:10.1f} {1000 * prof.off.get(cat, 0.0) / passes:16.3f}")
    tot = r["wall"] - inside
    lines.append(f"  {'total outside':20s} {1000 * tot / passes:8.3f} {100 * tot / r['wall']:7.2f}% {'':10s} "
                 f"{1000 * sum(prof.off.values()) / passes:16.3f}")
    return lines


# ------------------------------------------------------------------------------------------ llama.cpp


def anchors_bin() -> Path:
    env = os.environ.get("LLAMA_CPP_BIN")
    if env:
        return Path(env)
    out = subprocess.run(["bash", str(ANCHORS)], check=True, capture_output=True, text=True).stdout.strip()
    return Path(out.splitlines()[-1])


def run_simple(bin_dir: Path, target: Path, draft: Path, k: int, temp: float, n: int, threads: int,
               n_ctx: int) -> dict:
    cmd = [str(bin_dir / "llama-speculative-simple"), "-m", str(target), "-md", str(draft),
           "--spec-type", "draft-simple", "--spec-draft-n-max", str(k), "--spec-draft-n-min", "0",
           "--spec-draft-p-min", "0", "-n", str(n), "--temp", str(temp), "--seed", str(SEED), "-t", str(threads),
           *PLAIN_SAMPLING,
           "-td", str(threads), "-c", str(n_ctx), "-p", DEFAULT_PROMPT]
    p = subprocess.run(cmd, capture_output=True, text=True, errors="replace",
                       env=dict(os.environ, LD_LIBRARY_PATH=str(bin_dir)))
    if p.returncode != 0:
        raise SystemExit(f"llama-speculative-simple failed (rc {p.returncode}): "
                         + " | ".join(p.stderr.strip().splitlines()[-3:]))
    dec = re.search(r"decoded\s+(\d+) tokens in\s+([\d.]+) seconds, speed:\s+([\d.]+) t/s", p.stderr)
    nd = re.search(r"n_drafted\s*=\s*(\d+)", p.stderr)
    na = re.search(r"n_accept\s*=\s*(\d+)", p.stderr)
    if not (dec and nd and na):
        raise SystemExit("could not parse llama-speculative-simple's summary lines")
    d, a = int(nd.group(1)), int(na.group(1))
    return {"tps": float(dec.group(3)), "acc": a / d if d else 0.0, "n_drafted": d, "n_accept": a}


class Servers:
    """One llama-server per k (speculation settings are per process), started lazily, stopped at the end."""

    def __init__(self, binary: Path, target: Path, draft: Path, threads: int, n_ctx: int, tmp: Path) -> None:
        self.binary, self.target, self.draft = binary, target, draft
        self.threads, self.n_ctx, self.tmp = threads, n_ctx, tmp
        self.up: dict[int, object] = {}

    def get(self, k: int):
        from servers import LlamaServer

        if k not in self.up:
            t = str(self.threads)
            args = ["-m", str(self.target), "-md", str(self.draft), "--spec-type", "draft-simple",
                    "--spec-draft-n-max", str(k),
                    "--spec-draft-n-min", "0", "--spec-draft-p-min", "0", "-t", t, "-tb", t, "-td", t,
                    "-c", str(self.n_ctx), "-np", "1", "--no-warmup"]
            if self.binary.parent.joinpath("libllama.so").exists():
                os.environ["LD_LIBRARY_PATH"] = str(self.binary.parent)
            self.up[k] = LlamaServer(self.binary, args, self.tmp / f"server-k{k}.log")
        return self.up[k]

    def run(self, k: int, temp: float, n: int) -> dict:
        srv = self.get(k)
        body = json.dumps({"prompt": DEFAULT_PROMPT, "n_predict": n, "temperature": temp, "seed": SEED,
                           "top_k": 0, "top_p": 1.0, "min_p": 0.0,  # = PLAIN_SAMPLING
                           "cache_prompt": False, "stream": False}).encode()
        req = urllib.request.Request(srv.url + "/completion", data=body,  # noqa: S310 - our own 127.0.0.1 server
                                     headers={"Content-Type": "application/json"})
        with urllib.request.urlopen(req, timeout=600) as r:  # noqa: S310
            res = json.loads(r.read())
        t = res.get("timings", {})
        d, a = int(t.get("draft_n", 0)), int(t.get("draft_n_accepted", 0))
        return {"tps": float(t.get("predicted_per_second", 0.0)), "acc": a / d if d else 0.0, "n_drafted": d,
                "n_accept": a}

    def stop(self) -> None:
        for s in self.up.values():
            s.stop()


def server_binary() -> Path | None:
    from servers import llama_server_binary

    b = llama_server_binary()
    if b is not None:
        return b
    try:
        p = anchors_bin() / "llama-server"
    except (subprocess.CalledProcessError, OSError):
        return None
    return p if p.is_file() else None


# ------------------------------------------------------------------------------------------ the heads' rows

HEAD_KINDS = ("mtp", "eagle3")
HEAD_AGREE = 0.5  # make_spec_models --mtp-agree / --eagle3-agree: drafts partly accepted


def head_models(tmp: Path, vocab: str = "fast") -> dict[str, tuple[Path, Path | None]]:
    """kind -> (target, the head's file for llama-server's -md: None for MTP, the target's own layers)."""
    if vocab == "fast":
        from fast_spec_models import build_fast_spec_models  # noqa: PLC0415

        m = build_fast_spec_models(agree=HEAD_AGREE)
    else:
        import make_spec_models  # noqa: PLC0415

        m = make_spec_models.build_all(tmp / "spec-models", mtp_agree=HEAD_AGREE, eagle3_agree=HEAD_AGREE)
    return {"mtp": (m["mtp-agree-target"], None), "eagle3": (m["eagle3-agree-target"], m["eagle3-agree-draft"])}


def run_head_spectui(engine: Engine, kind: str, k: int, temp: float, n: int, tmp: Path) -> dict:
    """One run drafting with the engine's head, consumed as ``spectui --headless --record`` consumes it."""
    stats = S.RunStats()
    writer = TR.TraceWriter(tmp / f"spectui-{kind}-k{k}-t{temp}.jsonl", background=engine.spare_core)
    if engine.spare_core:
        writer.gate = engine.decoding
    control = RunControl(Settings(draft_max=k, temperature=temp, drafter=kind, seed=SEED))
    end = None
    try:
        for ev in engine.run(DEFAULT_PROMPT, control, n, overlap=True):
            writer.write(ev)
            stats.update(ev)
            if isinstance(ev, RunEnded):
                end = ev
        writer.flush()
    finally:
        writer.close()
    if end is None or end.reason not in ("n_predict", "eog"):
        raise SystemExit(f"spectui {kind} run ended with {getattr(end, 'reason', '?')}: {getattr(end, 'error', '')}")
    snap = stats.snapshot()
    return {"tps": snap.tokens_per_second, "acc": snap.acceptance_rate, "n_drafted": snap.n_drafted,
            "n_accept": snap.n_accepted}


class HeadServers(Servers):
    """One llama-server per (kind, k): ``--spec-type draft-mtp`` on the target, ``draft-eagle3`` with -md HEAD."""

    def __init__(self, binary: Path, models: dict, threads: int, n_ctx: int, tmp: Path) -> None:
        super().__init__(binary, Path(), Path(), threads, n_ctx, tmp)
        self.models = models

    def get(self, key):
        from servers import LlamaServer  # noqa: PLC0415

        if key not in self.up:
            kind, k = key
            target, head = self.models[kind]
            t = str(self.threads)
            args = ["-m", str(target), *(["-md", str(head)] if head else []), "--spec-type", f"draft-{kind}",
                    "--spec-draft-n-max", str(k), "--spec-draft-n-min", "0", "--spec-draft-p-min", "0",
                    "-t", t, "-tb", t, "-td", t, "-c", str(self.n_ctx), "-np", "1", "--no-warmup"]
            if self.binary.parent.joinpath("libllama.so").exists():
                os.environ["LD_LIBRARY_PATH"] = str(self.binary.parent)
            self.up[key] = LlamaServer(self.binary, args, self.tmp / f"server-{kind}-k{k}.log")
        return self.up[key]


def head_rows(a, ks: list[int], temps: list[float], tmp: Path) -> None:
    """The MTP and EAGLE-3 rows: spectui's loop against llama-server's own drafter, side by side."""
    models = head_models(tmp, a.heads_vocab)
    n_ctx = min(a.ctx, 2048)  # the generated models' training context (tests/tinymodels.py N_CTX_TRAIN)
    sb = None if a.no_server else server_binary()
    if sb is None and not a.no_server:
        print("llama-server not found (scripts/build-llama-server.sh): the heads' server column is left out",
              file=sys.stderr)
    servers = HeadServers(sb, models, a.threads, n_ctx, tmp) if sb is not None else None
    sides = ["spectui"] + (["server"] if servers is not None else [])
    res: dict[tuple, list[dict]] = defaultdict(list)
    cells = [(kind, k, t) for kind in HEAD_KINDS for t in temps for k in ks]
    try:
        engines = {kind: Engine(str(t), str(h) if h else None, n_ctx=n_ctx, threads=a.threads, head=kind,
                                inspect_top=a.inspect_top, head_in_every_run=False)
                   for kind, (t, h) in models.items()}
        try:
            where = models["mtp"][0].parent
            print(f"\nheads (generated models, {a.heads_vocab} vocabulary, {where}; load average "
                  f"{os.getloadavg()[0]:.2f}):")
            for rep in range(a.reps):
                for ci, (kind, k, temp) in enumerate(cells):
                    order = sides if (ci + rep) % 2 == 0 else sides[::-1]
                    for who in order:
                        if who == "spectui":
                            r = run_head_spectui(engines[kind], kind, k, temp, a.n, tmp)
                        else:
                            r = servers.run((kind, k), temp, a.n)
                        res[(who, kind, k, temp)].append(r)
                        print(f"rep {rep + 1} {kind:6s} k={k} T={temp:g} {who:8s} {r['tps']:9.2f} t/s  accept "
                              f"{100 * r['acc']:5.1f}% ({r['n_accept']}/{r['n_drafted']})", flush=True)
        finally:
            for e in engines.values():
                e.close()
    finally:
        if servers is not None:
            servers.stop()
    head = f"{'kind':6s} {'k':>2} {'T':>4} | {'spectui t/s':>11}"
    if servers is not None:
        head += f" | {'server t/s':>10} | {'ratio':>5}"
    print(head + " | accept spectui" + (" / server" if servers is not None else ""))
    for kind, k, temp in cells:
        med = {w: statistics.median(r["tps"] for r in res[(w, kind, k, temp)]) for w in sides}
        line = f"{kind:6s} {k:>2} {temp:>4g} | {med['spectui']:11.2f}"
        if servers is not None:
            line += f" | {med['server']:10.2f} | {med['spectui'] / med['server']:5.2f}"
        accs = " / ".join(f"{100 * statistics.median(r['acc'] for r in res[(w, kind, k, temp)]):.0f}%" for w in sides)
        print(line + " | " + accs)
    print("(medians over repetitions; ratio = spectui / llama-server decode tokens/s, the same generated models, "
          "prompt, -n, -t, -c and k)")


# ------------------------------------------------------------------------------------------ main


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--reps", type=int, default=2)
    ap.add_argument("--n", type=int, default=256)
    ap.add_argument("--ks", default="2,4,8")
    ap.add_argument("--temps", default="0,0.8")
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--ctx", type=int, default=2048)
    ap.add_argument("--inspect-top", type=int, default=5)
    ap.add_argument("--noise", type=float, default=0.05, help="the draft's noise (benchmarks/fastpair.py)")
    ap.add_argument("--no-server", action="store_true")
    ap.add_argument("--no-simple", action="store_true")
    ap.add_argument("--no-profile", action="store_true")
    ap.add_argument("--profile-only", action="store_true", help="only the profile tables (no comparison)")
    ap.add_argument("--paths", default="cpu,graph", help="spectui's --sampling paths to run side by side")
    ap.add_argument("--no-heads", action="store_true", help="leave out the MTP and EAGLE-3 rows")
    ap.add_argument("--heads-only", action="store_true", help="only the MTP and EAGLE-3 rows")
    ap.add_argument("--heads-vocab", choices=("fast", "tiny"), default="fast",
                    help="the heads' models: the fast pair's vocabulary size (151,936) or the tests' tiny one")
    ap.add_argument("--quick", action="store_true", help="a small setting: 1 rep, -n 32, k 2, T 0, no profile")
    a = ap.parse_args()
    if a.quick:
        a.reps, a.n, a.ks, a.temps, a.no_profile = 1, 32, "2", "0", True
    paths = [x for x in a.paths.split(",") if x]
    if not paths or any(x not in ("cpu", "graph", "graph-p") for x in paths):
        raise SystemExit("--paths: a comma list of cpu, graph, graph-p")
    ks = [int(x) for x in a.ks.split(",")]
    temps = [float(x) for x in a.temps.split(",")]
    tmp = Path(tempfile.mkdtemp(prefix="spectui-fast-"))
    if a.heads_only:
        print(f"machine: {os.cpu_count()} CPUs, load average {os.getloadavg()[0]:.2f} at start; -t {a.threads}, "
              f"-n {a.n}, --inspect-top {a.inspect_top}")
        head_rows(a, ks, temps, tmp)
        return
    target, draft = build_fast_pair(noise=a.noise)
    names = {"cpu": "spectui", "graph": "spectui-graph", "graph-p": "spectui-graph-p"}
    sides = [names[x] for x in paths]
    bin_dir = None
    if not a.profile_only and not a.no_simple:
        bin_dir = anchors_bin()
        sides.append("spec-simple")
    servers = None
    if not a.profile_only and not a.no_server:
        sb = server_binary()
        if sb is None:
            print("llama-server not found (scripts/build-llama-server.sh): its column is left out", file=sys.stderr)
        else:
            servers = Servers(sb, target, draft, a.threads, a.ctx, tmp)
            sides.append("server")
    engines = {names[x]: Engine(str(target), str(draft), n_ctx=a.ctx, threads=a.threads, inspect_top=a.inspect_top,
                                sampling=x.split("-")[0]) for x in paths}
    for x in paths:
        if x == "graph-p":  # the target's p from its temp + dist chain (a device's default) on this backend too
            engines[names[x]].parts().graph.target_p = "graph"
    engine = next(iter(engines.values()))
    try:
        first = next(iter(engine.run(DEFAULT_PROMPT, RunControl(Settings(draft_max=0)), 1)))
        print(f"machine: {os.cpu_count()} CPUs, load average {os.getloadavg()[0]:.2f} at start; -t {a.threads}, "
              f"-n {a.n}, -c {a.ctx}, --inspect-top {a.inspect_top}; fast pair {target.parent}")
        print(f"single-token decode: target {first.target_decode_ms:.2f} ms, draft {first.draft_decode_ms:.2f} ms")
        res: dict[tuple[str, int, float], list[dict]] = defaultdict(list)
        cells = [(k, t) for t in temps for k in ks]
        if not a.profile_only:
            for rep in range(a.reps):
                for ci, (k, temp) in enumerate(cells):
                    order = sides[ci % len(sides):] + sides[: ci % len(sides)]
                    if rep % 2:
                        order = order[::-1]
                    for who in order:
                        if who in engines:
                            r = run_spectui(engines[who], k, temp, a.n, tmp)
                        elif who == "spec-simple":
                            r = run_simple(bin_dir, target, draft, k, temp, a.n, a.threads, a.ctx)
                        else:
                            r = servers.run(k, temp, a.n)
                        res[(who, k, temp)].append(r)
                        extra = f"  outside llama_decode {100 * r['outside']:.2f}%" if who in engines else ""
                        print(f"rep {rep + 1} k={k} T={temp:g} {who:13s} {r['tps']:7.2f} t/s  accept "
                              f"{100 * r['acc']:5.1f}% ({r['n_accept']}/{r['n_drafted']}){extra}", flush=True)
            print(f"\nload average {os.getloadavg()[0]:.2f} at the end of the comparison")
            first = sides[0]  # the ratios' numerator: spectui's first path (cpu by default)
            head = f"{'k':>2} {'T':>4} | {first + ' t/s':>11} | {'outside':>7}"
            for w in [w for w in engines if w != first]:
                head += f" | {w.replace('spectui-', '') + ' t/s':>10} | {'outside':>7}"
            if "spec-simple" in sides:
                head += f" | {'spec-simple':>11} | {'ratio':>5}"
            if "server" in sides:
                head += f" | {'server t/s':>10} | {'ratio':>5}"
            head += " | accept " + " / ".join(w.replace("spectui-", "") for w in sides)
            print(head)
            for k, temp in cells:
                med = {w: statistics.median(r["tps"] for r in res[(w, k, temp)]) for w in sides}
                line = (f"{k:>2} {temp:>4g} | {med[first]:11.2f} | "
                        f"{100 * statistics.median(r['outside'] for r in res[(first, k, temp)]):6.2f}%")
                for w in [w for w in engines if w != first]:
                    line += (f" | {med[w]:10.2f} | "
                             f"{100 * statistics.median(r['outside'] for r in res[(w, k, temp)]):6.2f}%")
                if "spec-simple" in sides:
                    line += f" | {med['spec-simple']:11.2f} | {med[first] / med['spec-simple']:5.2f}"
                if "server" in sides:
                    line += f" | {med['server']:10.2f} | {med[first] / med['server']:5.2f}"
                accs = " / ".join(f"{100 * statistics.median(r['acc'] for r in res[(w, k, temp)]):.0f}%"
                                  for w in sides)
                print(line + " | " + accs)
            print("(medians over repetitions; ratio = spectui (first path) / other decode tokens/s; graph = "
                  "--sampling graph; graph-p = --sampling graph with the target's p from its chain; outside = "
                  "spectui's wall "
                  "time outside both models' llama_decode, prompt eval and calibration included; "
                  "targets: outside <= 3%, ratios >= 1.0)")
        if not a.no_profile:
            print("\nspectui's time outside llama_decode, by category (one profiled run per cell):")
            for who, eng in engines.items():
                print(f"{who} (--sampling {eng.sampling}"
                      f"{', target p: ' + eng.parts().graph.target_p if eng.parts().graph is not None else ''}):")
                for k, temp in cells:
                    for line in profile_table(eng, k, temp, a.n, tmp):
                        print(line)
    finally:
        for eng in engines.values():
            eng.close()
        if servers is not None:
            servers.stop()
    if not a.no_heads and not a.profile_only:
        head_rows(a, ks, temps, tmp)


if __name__ == "__main__":
    main()
