"""Re-run the 80 cases that failed in the hostile-input report (issue 26) and print held / failed per case.

Each case is the report's command line, run as a real subprocess (``python -m spectui``) in a scratch
folder: stdin /dev/null, stdout and stderr to files (``-o /dev/stdout`` means a redirect to a file, as
in the report), under a wall-clock limit; the fake servers (tests/hostile/fake_servers.py) listen on
127.0.0.1 on free ports instead of 18101-18125. Signal cases send the signal after a few seconds and
time the exit; TUI cases run on a pty (a key after a few seconds). Peak memory is the child's own
``ru_maxrss`` (os.wait4). At the end: the count held, and the peak memory on each hostile input class.

    .venv/bin/python benchmarks/hostile_cases.py [--only ID,ID] [--limit-s 30] [--keep DIR]
"""

from __future__ import annotations

import argparse
import dataclasses
import gzip
import json
import os
import pty
import re
import select
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(REPO / "tests" / "hostile"))

from fake_servers import FakeServer  # noqa: E402

from spectui.contract import events as ev  # noqa: E402
from spectui.contract.text import is_forbidden  # noqa: E402
from spectui.recording.trace import synthetic_run, write_trace  # noqa: E402

PY = [sys.executable, "-m", "spectui"]
TIME = "/usr/bin/time" if os.path.exists("/usr/bin/time") else ""
ESC = "\x1b]0;PWNED\x07\x1b]52;c;cm0gLXJmIH4=\x07\x1b[2J\x1b[6n\x1b]8;;http://x\x1b\\L\x1b]8;;\x1b\\\x9b31m\x08\r\x07\u202e"
TEXTUAL_OWN = re.compile(r"\x1b\[[0-9;]*[mHK]|\x1b\[\?[0-9;]*[hlu]|\x1b\]22;[a-z-]*\x07|\x1b\[>[0-9;]*[cu]|"
                         r"\x1b\[<u|\x1b\[=[0-9;]*u|\x1b\[[0-9;]*[ABCDJ]|\x1bP[^\x1b]*\x1b\\|\x1b[=>78]")
RAW_ATTACKS = ("\x1b]0;PWNED", "\x1b]52;", "\x1b]8;", "\x1b[6n", "\x9b", "\u202e")


@dataclasses.dataclass
class Result:
    rc: int | None
    out: str
    err: str
    wall: float
    rss_kb: int
    killed: bool = False


def forbidden(s: str, allow_cr: bool = False) -> list[str]:
    return sorted({hex(ord(c)) for c in s if is_forbidden(c) and not (allow_cr and c == "\r")})


def traceback_in(r: Result) -> bool:
    return "Traceback (most recent call last)" in r.err


# ------------------------------------------------------------------------------------------ inputs


def make_inputs(root: Path) -> None:
    t = root / "t"
    t.mkdir()
    for d in ("o", "out", "casts", "rodev"):
        (root / d).mkdir()
    write_trace(t / "small.jsonl", synthetic_run(6, seed=3))
    write_trace(t / "race-alone.jsonl.gz", synthetic_run(8, seed=1))
    write_trace(t / "race-draft.jsonl.gz", synthetic_run(8, seed=2))

    def poison(meta: bool, tokens: bool, text: str = ESC):
        for e in synthetic_run(40, seed=5):
            if meta and isinstance(e, ev.RunStarted):
                e = dataclasses.replace(e, target=dataclasses.replace(e.target, name="T" + text),
                                        draft=dataclasses.replace(e.draft, name="D" + text))
            if tokens and isinstance(e, ev.PassEvent):
                e = dataclasses.replace(e, emitted=tuple(dataclasses.replace(x, text=x.text + text)
                                                          for x in e.emitted[:1]) + e.emitted[1:])
            if meta and isinstance(e, ev.RunEnded):
                e = dataclasses.replace(e, error="E" + text)
            yield e

    write_trace(t / "esc_tokens.jsonl", poison(False, True))
    write_trace(t / "esc_all.jsonl", poison(True, True))
    write_trace(t / "esc_meta.jsonl", poison(True, False))
    write_trace(t / "surrogate.jsonl", poison(False, True, "\ud800"))
    write_trace(t / "surrogate_meta.jsonl", poison(True, False, "\ud800"))
    small = (t / "small.jsonl").read_bytes()
    header = small.split(b"\n", 1)[0] + b"\n"
    with gzip.open(t / "bomb_noline.jsonl.gz", "wb", compresslevel=9) as fh:  # header + 1.1 GB of spaces
        fh.write(header)
        block = b" " * (1 << 24)
        for _ in range(66):
            fh.write(block)
    for name, mb in (("bomb_blank.jsonl.gz", 1100), ("bomb_blank100m.jsonl.gz", 100)):  # newlines
        with gzip.open(t / name, "wb", compresslevel=9) as fh:
            fh.write(header)
            block = b"\n" * (1 << 20)
            for _ in range(mb):
                fh.write(block)
    longer = t / "longer.jsonl.gz"
    write_trace(longer, synthetic_run(120, seed=6))
    data = bytearray(longer.read_bytes())
    mid = len(data) // 2
    data[mid:mid + 50] = b"\x55" * 50
    (t / "corrupt.jsonl.gz").write_bytes(bytes(data))
    (t / "bom.jsonl").write_bytes(b"\xef\xbb\xbf" + small)

    def timing_variant(name: str, fn, everything: bool = False):
        lines = []
        for line in small.decode().splitlines():
            d = json.loads(line)
            if d.get("type") == "pass":
                for k in d["timing"]:
                    d["timing"][k] = fn(d["timing"][k])
            if everything and d.get("type") == "start":
                d["target_decode_ms"] = d["draft_decode_ms"] = fn(1.0)
            lines.append(json.dumps(d))
        (t / name).write_text("\n".join(lines) + "\n")

    timing_variant("nan_time.jsonl", lambda v: float("nan"))
    timing_variant("inf_time.jsonl", lambda v: float("inf"))
    timing_variant("neg_time.jsonl", lambda v: -abs(v) - 1000.0)
    timing_variant("all_nan.jsonl", lambda v: float("nan"), everything=True)
    timing_variant("all_zero_time.jsonl", lambda v: 0.0, everything=True)
    for link in ("my_stdout", "my_stdout_b", "my_stdout_att"):
        os.symlink("/proc/self/fd/1", root / "o" / link)
    os.symlink("/proc/self/fd/1", root / "rodev" / "stdout")
    os.chmod(root / "rodev", 0o555)  # noqa: S103 - a read-only folder, on purpose


def mount_tiny(root: Path) -> bool:
    """A 64 KB tmpfs at tiny/ (a full disk); False where this machine does not allow a mount."""
    tiny = root / "tiny"
    tiny.mkdir()
    r = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=64k", "tmpfs", str(tiny)], capture_output=True)
    if r.returncode != 0:
        return False
    (tiny / "x.json").write_text('{"schema": "spectui.bench"}\n' + "x" * 1000)
    with open(tiny / "fill", "wb") as fh:
        try:
            fh.write(b"\0" * (1 << 20))
        except OSError:
            pass
    return True


# ------------------------------------------------------------------------------------------ running


def run(root: Path, argv: list[str], limit_s: float, *, stdout_path: Path | None = None,
        sig: tuple[float, int] | None = None) -> Result:
    out_path = stdout_path or (root / "out" / f"run{time.monotonic_ns()}.out")
    err_path = out_path.with_suffix(".err")
    env = dict(os.environ, PYTHONPATH=str(REPO), NO_COLOR="1")
    env.pop("TEXTUAL_DRIVER", None)
    rss_path = out_path.with_suffix(".rss")
    if TIME and sig is None:  # /usr/bin/time measures from a small parent (a child forked from this script
        # starts at this script's size); not for a signal case, whose signal must reach spectui itself
        argv = [TIME, "-q", "-f", "%M", "-o", str(rss_path), *argv]
    t0 = time.monotonic()
    with open(out_path, "wb") as fo, open(err_path, "wb") as fe:
        p = subprocess.Popen(argv, cwd=root, stdin=subprocess.DEVNULL, stdout=fo, stderr=fe, env=env,
                             start_new_session=True)
    killed = []
    if sig is not None:
        def send():
            time.sleep(sig[0])
            try:
                os.kill(p.pid, sig[1])
            except ProcessLookupError:
                pass
        threading.Thread(target=send, daemon=True).start()

    def watchdog():
        if not done.wait(limit_s):
            killed.append(True)
            try:
                os.killpg(p.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass

    done = threading.Event()
    threading.Thread(target=watchdog, daemon=True).start()
    _, status, usage = os.wait4(p.pid, 0)
    done.set()
    p.returncode = os.waitstatus_to_exitcode(status)
    wall = time.monotonic() - t0
    out = out_path.read_bytes().decode("utf-8", "replace") if out_path.exists() else ""
    err = err_path.read_bytes().decode("utf-8", "replace")
    rss = usage.ru_maxrss
    if TIME and rss_path.exists():
        lines = [ln for ln in rss_path.read_text().splitlines() if ln.strip().isdigit()]
        rss = int(lines[-1]) if lines else rss
    return Result(p.returncode, out, err, wall, rss, bool(killed))


def run_pty(root: Path, argv: list[str], key_after: float, limit_s: float) -> Result:
    """``argv`` on a pty (120x36); ``q`` typed after ``key_after`` s. Returns every byte it drew."""
    env = dict(os.environ, PYTHONPATH=str(REPO), TERM="xterm-256color", COLUMNS="120", LINES="36")
    env.pop("TEXTUAL_DRIVER", None)
    rss_path = root / "out" / f"pty{time.monotonic_ns()}.rss"
    if TIME:
        argv = [TIME, "-q", "-f", "%M", "-o", str(rss_path), *argv]
    t0 = time.monotonic()
    pid, fd = pty.fork()
    if pid == 0:
        os.chdir(root)
        os.execvpe(argv[0], argv, env)  # noqa: S606 - the case's own argv
    import fcntl
    import struct
    import termios
    fcntl.ioctl(fd, termios.TIOCSWINSZ, struct.pack("HHHH", 36, 120, 0, 0))
    buf = bytearray()
    sent = killed = False
    status = usage = None
    while True:
        now = time.monotonic() - t0
        if not sent and now >= key_after:
            os.write(fd, b"q")
            sent = True
        if now > limit_s:
            os.kill(pid, signal.SIGKILL)
            killed = True
        r, _, _ = select.select([fd], [], [], 0.1)
        if r:
            try:
                chunk = os.read(fd, 65536)
            except OSError:
                chunk = b""
            buf += chunk
        wpid, st, ru = os.wait4(pid, os.WNOHANG)
        if wpid:
            status, usage = st, ru
            try:
                while select.select([fd], [], [], 0.1)[0]:
                    c = os.read(fd, 65536)
                    if not c:
                        break
                    buf += c
            except OSError:
                pass
            break
    os.close(fd)
    rss = usage.ru_maxrss
    if TIME and rss_path.exists():
        lines = [ln for ln in rss_path.read_text().splitlines() if ln.strip().isdigit()]
        rss = int(lines[-1]) if lines else rss
    return Result(os.waitstatus_to_exitcode(status), buf.decode("utf-8", "replace"), "",
                  time.monotonic() - t0, rss, killed)


# ------------------------------------------------------------------------------------------ the cases


def cases(root: Path, srv: dict[str, str], tiny: bool, limit_s: float):
    """(id, class, description, function returning (held, note, result))."""
    S = srv
    L = limit_s

    def sp(*args):
        return PY + [str(a) for a in args]

    def one_line(r: Result, code: int, *needles: str):
        lines = [ln for ln in r.err.splitlines() if ln.strip()]
        ok = r.rc == code and not traceback_in(r) and len(lines) >= 1 and all(n in r.err for n in needles)
        return ok, f"rc {r.rc}; {lines[0][:150] if lines else '(no stderr)'}"

    def clean(r: Result, code: int = 0, allow_cr: bool = False):
        bad = forbidden(r.out, allow_cr) + forbidden(r.err, allow_cr)
        return r.rc == code and not bad and not traceback_in(r), f"rc {r.rc}; forbidden {bad or 'none'}"

    def is_link(p: Path) -> bool:
        return p.is_symlink() and os.readlink(p) == "/proc/self/fd/1"

    def c10():
        before = is_link(Path("/dev/stdout")) if Path("/dev/stdout").is_symlink() else None
        target = os.readlink("/dev/stdout") if before is not None else None
        r = run(root, sp("cast", "t/small.jsonl", "-o", "/dev/stdout"), L, stdout_path=root / "out" / "C10.out")
        after_ok = Path("/dev/stdout").is_symlink() if before is not None else True
        if before is not None and not after_ok:  # repair at once, as the report did
            os.replace("/dev/stdout", root / "o" / "dev_stdout_replaced_file")
            os.symlink(target, "/dev/stdout")
        got = (root / "out" / "C10.out").read_text(errors="replace").split("\n", 1)[0]
        return (r.rc == 0 and after_ok and '"version": 2' in got,
                f"rc {r.rc}; /dev/stdout still a link: {after_ok}; the redirect's file holds the cast: "
                f"{'version' in got}", r)

    def link_case(argv, link: str, check_first):
        def f():
            out = root / "out" / f"{link}.out"
            r = run(root, argv, L, stdout_path=out)
            kept = is_link(root / "o" / link)
            first = out.read_text(errors="replace").split("\n", 1)[0]
            return (r.rc == 0 and kept and check_first(first),
                    f"rc {r.rc}; link kept: {kept}; the redirect's file: {first[:60]!r}", r)
        return f

    def same_path(*opts, force=False):
        def f():
            target = root / "o" / f"same{len(opts)}{int(force)}.json"
            args = ["bench", "--url", S["ok"], "-n", "4", "--timeout", "10", "--limit", "1"]
            for o in opts:
                args += [o, str(target)]
            r = run(root, sp(*args, *(["--force"] if force else [])), L)
            ok, note = one_line(r, 2, "both name")
            return ok and not target.exists() and r.wall < 10, note + f"; file written: {target.exists()}", r
        return f

    def w07():
        if not tiny:
            target = "/dev/full"
        else:
            target = "tiny/x.json"
        md = root / "o" / "md_ok.md"
        r = run(root, sp("bench", "--url", S["ok"], "--limit", "1", "-n", "4", "--json", target, "--markdown", md), L)
        ok, note = one_line(r, 2, "cannot write")
        table = "overall" in r.out.lower() or "category" in r.out.lower()
        return (ok and md.exists() and table,
                note + f"; {target}; markdown written: {md.exists()}; table printed: {table}", r)

    def headless_clean(trace, *extra):
        def f():
            r = run(root, sp("replay", trace, "--headless", *extra), L)
            ok, note = clean(r)
            return ok, note, r
        return f

    def pty_no_raw(argv, key_after, must_exit=True):
        def f():
            r = run_pty(root, argv, key_after, L)
            raw = [a for a in RAW_ATTACKS if a in r.out]
            ok = not raw and (not must_exit or (r.rc == 0 and not r.killed))
            return ok, f"rc {r.rc}; raw attack sequences in the terminal stream: {raw or 'none'}", r
        return f

    def re_meta_pty():
        ts = root / "out" / "typescript"
        r = run(root, ["script", "-qfec", " ".join(sp("replay", "t/esc_meta.jsonl", "--headless")), str(ts)], L)
        data = ts.read_bytes().decode("utf-8", "replace") if ts.exists() else ""
        bad = forbidden(data, allow_cr=True)
        return r.rc == 0 and bool(data) and not bad, f"rc {r.rc}; forbidden in the typescript: {bad or 'none'}", r

    def ce_meta():
        out = root / "casts" / "esc_meta.cast"
        r = run(root, sp("cast", "t/esc_meta.jsonl", "-o", out, "--speed", "8"), L)
        bad = []
        if out.exists():
            lines = out.read_text().splitlines()
            bad += forbidden(lines[0])
            for line in lines[2:-1]:
                bad += forbidden(TEXTUAL_OWN.sub("", json.loads(line)[2]))
        note = f"rc {r.rc}; forbidden in frames: {sorted(set(bad)) or 'none'}"
        return r.rc == 0 and out.exists() and not bad, note, r

    def attach_clean(url, *extra, code=None):
        def f():
            r = run(root, sp("attach", url, "--headless", *extra), L)
            bad = forbidden(r.out) + forbidden(r.err)
            ok = not bad and not traceback_in(r) and (code is None or r.rc == code)
            return ok, f"rc {r.rc}; forbidden {bad or 'none'}; {r.err.strip()[:120]!r}", r
        return f

    def ends_within(argv, seconds, code=None):
        def f():
            r = run(root, argv, L)
            ok = not r.killed and r.wall <= seconds and not traceback_in(r) and (code is None or r.rc == code)
            last = r.err.strip().splitlines()[-1][:100] if r.err.strip() else ""
            return ok, f"rc {r.rc}; {r.wall:.1f} s (limit {seconds} s); {last}", r
        return f

    def signal_case(signum, record=False):
        def f():
            args = ["attach", S["drip"], "--headless", "--interval", "0.5"]
            rec = root / "o" / f"drip{signum}.jsonl"
            if record:
                args += ["--record", str(rec)]
            r = run(root, sp(*args), L, sig=(4.0, signum))
            after = r.wall - 4.0
            complete = True
            if record:
                last = rec.read_text().strip().splitlines()[-1] if rec.exists() else ""
                complete = '"attach_end"' in last
            ok = r.rc == 128 + signum and after <= 1.5 and complete and not traceback_in(r)
            return ok, f"rc {r.rc}; exited {after:.2f} s after the signal; trace complete: {complete}", r
        return f

    def memory_case(argv, code, mb=100, *needles):
        def f():
            r = run(root, argv, L)
            ok, note = one_line(r, code, *needles)
            ok = ok and r.rss_kb < mb * 1024 and not r.killed and r.wall < 20
            return ok, note + f"; peak {r.rss_kb / 1024:.1f} MB; {r.wall:.1f} s", r
        return f

    def report_memory(argv, code, mb, needle):  # bench: the failure is the report's "Stopped at" line (stdout)
        def f():
            r = run(root, argv, L)
            ok = r.rc == code and needle in r.out and not traceback_in(r) and r.rss_kb < mb * 1024 and r.wall < 20
            return ok, f"rc {r.rc}; {needle!r} in the report: {needle in r.out}; peak {r.rss_kb / 1024:.1f} MB", r
        return f

    def usage_case(argv, *needles):
        def f():
            r = run(root, argv, L)
            ok, note = one_line(r, 2, *needles)
            return ok and r.wall < 15, note, r
        return f

    def crash_free(argv, code):
        def f():
            r = run(root, argv, L)
            bad = forbidden(r.out) + forbidden(r.err)
            return (r.rc == code and not traceback_in(r) and not bad,
                    f"rc {r.rc}; traceback: {traceback_in(r)}; forbidden {bad or 'none'}", r)
        return f

    def full_record(target):
        def f():
            r = run(root, sp("attach", S["ok"], "--headless", "--interval", "0.05" if "tiny" in target else "0.5",
                             "--count", "300" if "tiny" in target else "2", "--record", target), L)
            ok, note = one_line(r, 2, "cannot write")
            return ok, note, r
        return f

    def output_contains(argv, code, *needles, absent=()):
        def f():
            r = run(root, argv, L)
            text = r.out + r.err
            ok = (code is None or r.rc == code) and all(n in text for n in needles) and not any(
                a in text for a in absent) and not traceback_in(r)
            last = [ln for ln in text.splitlines() if any(n in ln for n in needles)]
            shown = last[0] if last else text.strip().splitlines()[-1] if text.strip() else ""
            return ok, f"rc {r.rc}; {shown[:140]!r}", r
        return f

    def strict_json(trace):
        def f():
            r = run(root, sp("replay", trace, "--headless", "--json"), L)
            try:
                json.loads(r.out, parse_constant=lambda c: (_ for _ in ()).throw(ValueError(c)))
                ok = r.rc == 0
                note = f"rc {r.rc}; strict JSON"
            except ValueError as exc:
                ok, note = False, f"rc {r.rc}; not strict JSON: {exc}"
            return ok, note, r
        return f

    def c10d():
        out = root / "out" / "C10d.out"
        r = run(root, sp("cast", "t/small.jsonl", "-o", "rodev/stdout"), L, stdout_path=out)
        first = out.read_text(errors="replace").split("\n", 1)[0]
        kept = is_link(root / "rodev" / "stdout")
        note = f"rc {r.rc}; link kept: {kept}; cast in the redirect's file: {'version' in first}"
        return r.rc == 0 and kept and '"version": 2' in first, note, r

    trace_first = lambda s: '"spectui.trace"' in s  # noqa: E731
    json_first = lambda s: s.startswith("{")  # noqa: E731
    return [
        ("C10", "data loss", c10),
        ("C10b", "data loss", link_case(sp("cast", "t/small.jsonl", "-o", "o/my_stdout"), "my_stdout",
                                        lambda s: '"version": 2' in s)),
        ("B28", "data loss", link_case(sp("bench", "--url", S["ok"], "-n", "4", "--timeout", "10", "--limit", "1",
                                          "--json", "o/my_stdout_b"), "my_stdout_b", json_first)),
        ("W06", "data loss", link_case(sp("attach", S["ok"], "--json", "--count", "1", "--interval", "0.5",
                                          "--record", "o/my_stdout_att"), "my_stdout_att", trace_first)),
        ("B30", "data loss", same_path("--json", "--csv")),
        ("B27", "data loss", same_path("--json", "--csv")),
        ("B29", "data loss", same_path("--json", "--csv", "--markdown", force=True)),
        ("W07", "data loss", w07),
        ("RE_tokens", "terminal injection", headless_clean("t/esc_tokens.jsonl")),
        ("RE_all", "terminal injection", headless_clean("t/esc_all.jsonl")),
        ("RE_meta", "terminal injection", headless_clean("t/esc_meta.jsonl")),
        ("RE_meta_pty", "terminal injection", re_meta_pty),
        ("CE_meta", "terminal injection", ce_meta),
        ("RE_meta_tui3", "terminal injection", pty_no_raw(sp("replay", "t/esc_meta.jsonl", "--speed", "max"), 6)),
        ("A13", "terminal injection", crash_free(sp("race", "t/race-alone.jsonl.gz", "t/esc_meta.jsonl", "--headless",
                                                    "--speed", "max", "--any-prompt"), 0)),
        ("T24", "terminal injection", attach_clean(S["err500"], "--count", "2", "--interval", "0.5", code=1)),
        ("T41", "terminal injection", attach_clean(S["esc_label"], "--count", "2", "--interval", "0.5", code=0)),
        ("T43_tui", "terminal injection", pty_no_raw(sp("attach", S["esc_label"], "--interval", "0.5"), 5)),
        ("T47", "terminal injection", attach_clean(S["esc_stream"], "-p", "hi", "-n", "8", "--duration", "5",
                                                   code=0)),
        ("T35", "terminal injection", attach_clean(S["nonhttp"], "--count", "2", "--interval", "0.5", code=1)),
        ("T30", "hang", ends_within(sp("attach", S["drip"], "--headless", "--count", "3", "--interval", "0.5"), 6)),
        ("T31", "hang", ends_within(sp("attach", S["drip"], "--headless", "--duration", "3"), 6)),
        ("G25", "hang", signal_case(signal.SIGTERM)),
        ("G26", "hang", signal_case(signal.SIGINT)),
        ("G27", "hang", signal_case(signal.SIGHUP, record=True)),
        ("T53_tui", "hang", pty_no_raw(sp("attach", S["drip"], "--interval", "0.5"), 4)),
        ("B06", "hang", ends_within(sp("bench", "--url", S["drip"], "--limit", "1", "-n", "8", "--timeout", "3"), 15,
                                    code=2)),
        ("G02", "hang", memory_case(sp("replay", "t/bomb_blank.jsonl.gz", "--headless"), 2, 100, "blank lines")),
        ("G03", "hang", memory_case(sp("replay", "t/bomb_blank100m.jsonl.gz", "--headless"), 2, 100, "blank lines")),
        ("T15", "hang", usage_case(sp("attach", S["ok"], "--interval", "inf", "--count", "1", "--headless"),
                                   "--interval")),
        ("R28", "hang", usage_case(sp("replay", "t/small.jsonl"), "needs a terminal")),
        ("M09", "hang", usage_case(sp("demo", "--act", "1", "--speed", "max"), "needs a terminal")),
        ("A15", "hang", usage_case(sp("race", "t/race-alone.jsonl.gz", "t/race-draft.jsonl.gz", "--speed", "max"),
                                   "needs a terminal")),
        ("T56", "hang", usage_case(sp("attach", S["ok"], "--count", "2", "--interval", "0.5"), "needs a terminal")),
        ("G01", "unbounded memory", memory_case(sp("replay", "t/bomb_noline.jsonl.gz", "--headless"), 2, 100,
                                                "longer than")),
        ("R40", "unbounded memory", memory_case(sp("replay", "/dev/zero", "--headless"), 2, 100, "longer than")),
        ("P13", "unbounded memory", memory_case(sp("bench", "--url", S["ok"], "-n", "4", "--timeout", "10",
                                                   "--prompts", "/dev/zero", "--limit", "1"), 2, 100, "larger than")),
        ("P13b", "unbounded memory", memory_case(sp("bench", "--url", S["ok"], "-n", "4", "--timeout", "10",
                                                    "--prompts", "/dev/zero", "--limit", "1"), 2, 100, "larger than")),
        ("P18", "unbounded memory", memory_case(sp("bench", "--url", S["ok"], "-n", "4", "--timeout", "10",
                                                   "--prompts", "/dev/urandom", "--limit", "1"), 2, 100,
                                                "larger than")),
        ("T48", "unbounded memory", memory_case(sp("attach", S["endless"], "-p", "hi", "-n", "8", "--headless",
                                                   "--duration", "5"), 1, 100, "longer than")),
        ("B31", "unbounded memory", report_memory(sp("bench", "--url", S["endless"], "--limit", "1", "-n", "4",
                                                     "--timeout", "20"), 1, 100, "a stream line longer than 1 MiB")),
        ("T07", "traceback", usage_case(sp("attach", "http://[::1:18101", "--headless", "--count", "1"), "not a URL")),
        ("T11", "traceback", usage_case(sp("attach", "http://\x1b]0;X:1", "--headless", "--count", "1"))),
        ("B09", "traceback", usage_case(sp("bench", "--url", "http://[::1", "--limit", "1"), "not a URL")),
        ("T59", "traceback", usage_case(sp("attach", S["ok"], "--timeout", "nan", "--count", "2", "--interval", "0.5",
                                           "--headless"), "--timeout")),
        ("T60", "traceback", usage_case(sp("attach", S["ok"], "--timeout", "inf", "--count", "2", "--interval", "0.5",
                                           "--headless"), "--timeout")),
        ("U01", "traceback", crash_free(sp("replay", "t/surrogate.jsonl", "--headless"), 0)),
        ("U02", "traceback", crash_free(sp("replay", "t/surrogate.jsonl", "--headless", "--json"), 0)),
        ("U03", "traceback", crash_free(sp("replay", "t/surrogate_meta.jsonl", "--headless"), 0)),
        ("U06", "traceback", crash_free(sp("cast", "t/surrogate_meta.jsonl", "-o", "o/surm.cast", "--speed", "8"), 0)),
        ("T54", "traceback", crash_free(sp("attach", S["surrogate_stream"], "-p", "hi", "-n", "4", "--headless",
                                           "--duration", "5"), 0)),
        ("W01", "traceback", full_record("tiny/a.jsonl") if tiny else full_record("/dev/full")),
        ("W02", "traceback", full_record("/dev/full")),
        ("B22", "traceback", output_contains(sp("bench", "--url", S["ok"], "-n", "4", "--timeout", "10", "--limit", "1",
                                                "--markdown", "/dev/full"), 2, "cannot write")),
        ("T14", "bad input accepted", usage_case(sp("attach", S["ok"], "--interval", "nan", "--count", "1",
                                                    "--headless"), "--interval")),
        ("T58", "bad input accepted", usage_case(sp("attach", S["ok"], "--interval", "nan", "--duration", "3",
                                                    "--headless"), "--interval")),
        ("T61", "bad input accepted", usage_case(sp("attach", S["ok"], "--duration", "nan", "--headless"),
                                                 "--duration")),
        ("S06", "bad input accepted", usage_case(sp("serve", "--host", "", "--port", "18203"), "--host")),
        ("S07", "bad input accepted", usage_case(sp("serve", "nosuchcommand", "--port", "18204"), "nosuchcommand")),
        ("T36", "misleading", output_contains(sp("attach", S["nan"], "--headless", "--count", "3", "--interval", "0.5"),
                                              None, "impossible counter")),
        ("T37", "misleading", output_contains(sp("attach", S["inf"], "--headless", "--count", "3", "--interval", "0.5"),
                                              None, "impossible counter")),
        ("T40", "misleading", output_contains(sp("attach", S["accgtdraft"], "--headless", "--count", "3", "--interval",
                                                 "0.5"), None, "impossible counters", absent=("50000",))),
        ("B_accgtdraft", "misleading", output_contains(sp("bench", "--url", S["accgtdraft"], "--limit", "2", "-n", "4",
                                                          "--timeout", "10"), None, "impossible counters",
                                                       absent=("50000",))),
        ("T25", "misleading", output_contains(sp("attach", S["redirect"], "--headless", "--count", "2", "--interval",
                                                 "0.5"), 1, "redirect loop", absent=("last 30x",))),
        ("T10", "misleading", output_contains(sp("attach", "http://user:secret@" + S["ok"].split("://")[1],
                                                 "--headless", "--count", "1"), 2, "credentials", absent=("secret",))),
        ("T45", "misleading", output_contains(sp("attach", S["html"], "-p", "hi", "-n", "8", "--headless",
                                                 "--duration", "5"), 1, "HTML")),
        ("B02", "misleading", output_contains(sp("bench", "--url", S["html"], "--limit", "1", "-n", "8"), 2, "HTML")),
        ("T49", "misleading", output_contains(sp("attach", S["slow_stream"], "-p", "hi", "-n", "8", "--headless",
                                                 "--duration", "5"), 1, "--duration 5", absent=("by the user",))),
        ("B32", "misleading", usage_case(sp("bench", "--url", S["ok"], "--timeout", "nan", "--limit", "1"),
                                         "--timeout")),
        ("B33", "misleading", usage_case(sp("bench", "--url", S["ok"], "--timeout", "-5", "--limit", "1", "-n", "4"),
                                         "--timeout")),
        ("R13", "misleading", output_contains(sp("replay", "t/corrupt.jsonl.gz", "--headless"), 2, "damaged",
                                              absent=("probably killed",))),
        ("RX_bom", "misleading", crash_free(sp("replay", "t/bom.jsonl", "--headless"), 0)),
        ("RT_nan_time", "misleading", output_contains(sp("replay", "t/nan_time.jsonl", "--headless"), 0,
                                                      "is NaN", absent=("nan ", "nan)"))),
        ("RT_inf_time", "misleading", output_contains(sp("replay", "t/inf_time.jsonl", "--headless"), 0,
                                                      "is Infinity", absent=("inf ", "nan "))),
        ("RT_neg_time", "misleading", output_contains(sp("replay", "t/neg_time.jsonl", "--headless"), 0,
                                                      "negative", absent=("-999",))),
        ("RT_all_nan", "misleading", output_contains(sp("replay", "t/all_nan.jsonl", "--headless"), 0, "is NaN",
                                                     absent=("nan ", "nan)"))),
        ("RT_all_zero_time", "misleading", output_contains(sp("replay", "t/all_zero_time.jsonl", "--headless"), 0,
                                                           "no timings", absent=("best k",))),
        ("C10d", "misleading", c10d),
        ("RJ_nan", "misleading", strict_json("t/nan_time.jsonl")),
        ("RJ_inf", "misleading", strict_json("t/inf_time.jsonl")),
    ]


MEMORY_CLASSES = {  # hostile input class -> the cases that feed it
    "gzip bomb, one endless line (G01)": ["G01"],
    "gzip bomb, blank lines (G02, G03)": ["G02", "G03"],
    "/dev/zero as a trace (R40)": ["R40"],
    "/dev/zero, /dev/urandom as prompts (P13, P13b, P18)": ["P13", "P13b", "P18"],
    "a server's endless stream line (T48, B31)": ["T48", "B31"],
    # (G25-G27, the signal cases, are not measured through /usr/bin/time: their signal must reach spectui)
    "a server that drips /metrics (T30, T31)": ["T30", "T31"],
}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--only", default="", help="comma-separated case ids")
    ap.add_argument("--limit-s", type=float, default=30.0, help="wall-clock limit per case (the report's: 60)")
    ap.add_argument("--keep", default=None, help="scratch folder to keep (default: a temporary one, removed)")
    args = ap.parse_args()
    root = Path(args.keep or tempfile.mkdtemp(prefix="spectui-hostile-"))
    root.mkdir(parents=True, exist_ok=True)
    make_inputs(root)
    tiny = mount_tiny(root)
    modes = ["ok", "html", "err500", "redirect", "drip", "nan", "inf", "neg", "accgtdraft", "esc_label", "nonhttp",
             "endless", "slow_stream", "esc_stream", "surrogate_stream"]
    servers = {m: FakeServer(m) for m in modes}
    only = {x for x in args.only.split(",") if x}
    results: dict[str, tuple[bool, str, Result]] = {}
    try:
        for cid, cls, fn in cases(root, {m: s.url for m, s in servers.items()}, tiny, args.limit_s):
            if only and cid not in only:
                continue
            try:
                held, note, r = fn()
            except Exception as exc:  # noqa: BLE001 - a broken case is a failed case, with its reason
                held, note = False, f"the case itself failed: {type(exc).__name__}: {exc}"
                r = Result(None, "", "", 0, 0)
            results[cid] = (held, note, r)
            print(f"{'held  ' if held else 'FAILED'} {cid:<17} {cls:<20} {r.wall:6.1f} s {r.rss_kb / 1024:7.1f} MB  "
                  f"{note}", flush=True)
    finally:
        for s in servers.values():
            s.stop()
        if tiny:
            subprocess.run(["umount", str(root / "tiny")], capture_output=True)
        if not args.keep:
            os.chmod(root / "rodev", 0o755)  # noqa: S103 - writable again, to remove it
            shutil.rmtree(root, ignore_errors=True)
    n_held = sum(1 for h, _, _ in results.values() if h)
    print(f"\n{n_held} of {len(results)} held" + ("" if tiny else " (no tmpfs mount here: W01/W07 used /dev/full)"))
    print("\npeak memory (the child's ru_maxrss) per hostile input class:")
    for name, ids in MEMORY_CLASSES.items():
        got = [results[i][2].rss_kb / 1024 for i in ids if i in results]
        if got:
            print(f"  {name:<52} {max(got):7.1f} MB")
    return 0 if n_held == len(results) else 1


if __name__ == "__main__":
    sys.exit(main())
