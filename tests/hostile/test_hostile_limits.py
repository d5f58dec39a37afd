"""Bounded input (issue 26, part 2): every reader has limits on line length, decompressed size and item count,
refused with one line and exit 2, in bounded memory and within seconds. Small files the tests write (a
gzip bomb is small), /dev/zero and /dev/urandom, and real local HTTP servers (tests/hostile/fake_servers.py).
Peak memory is measured in a subprocess (its own ru_maxrss)."""

from __future__ import annotations

import gzip
import json
import time
from pathlib import Path

import pytest
from fake_servers import FakeServer
from peak_rss import run_peak

from spectui.bench.datasets import MAX_PROMPT_FILE_BYTES, MAX_PROMPTS, load_prompts
from spectui.contract.errors import SpectuiError
from spectui.recording import reader as tr  # the reader reads its limits
from spectui.recording.trace import TraceError, TraceLimitError, iter_trace, synthetic_run, write_trace

REPO = Path(__file__).resolve().parents[2]


def spectui_peak(*args: str, cwd: Path | None = None) -> tuple[int, float, float, str]:
    """(exit status, peak RSS in MB, seconds, stderr) of ``python -m spectui ARGS`` (tests/hostile/peak_rss.py)."""
    rc, s, mb, _, err = run_peak(*args, timeout=180, cwd=cwd)
    return rc, mb, s, err.decode("utf-8", "replace")


def header_of(tmp_path: Path) -> bytes:
    p = tmp_path / "h.jsonl"
    write_trace(p, synthetic_run(1))
    return p.read_bytes().split(b"\n", 1)[0] + b"\n"


@pytest.fixture
def bombs(tmp_path):
    head = header_of(tmp_path)
    noline = tmp_path / "bomb_noline.jsonl.gz"
    with gzip.open(noline, "wb", compresslevel=9) as fh:  # the header, then 64 MiB of spaces on one line
        fh.write(head)
        for _ in range(64):
            fh.write(b" " * (1 << 20))
    blank = tmp_path / "bomb_blank.jsonl.gz"
    with gzip.open(blank, "wb", compresslevel=9) as fh:  # the header, then 64 MiB of newlines
        fh.write(head)
        for _ in range(64):
            fh.write(b"\n" * (1 << 20))
    return noline, blank


@pytest.mark.slow  # seconds of processes or large inputs: the full suite runs it, the fast lane does not
@pytest.mark.parametrize("which", [0, 1])
def test_gzip_bombs_are_refused_in_bounded_memory_within_seconds(bombs, which):
    path = bombs[which]
    assert path.stat().st_size < 1 << 20  # a small file
    rc, mb, secs, err = spectui_peak("replay", str(path), "--headless")
    assert rc == 2, err
    lines = [ln for ln in err.splitlines() if ln.strip()]
    assert len(lines) == 1 and lines[0].startswith("spectui: error:") and "docs/untrusted-input.md" in lines[0]
    assert ("longer than 16 MiB" if which == 0 else "more than 10000 blank lines") in lines[0]
    assert mb < 100 and secs < 20, (mb, secs)


@pytest.mark.slow  # seconds of processes or large inputs: the full suite runs it, the fast lane does not
@pytest.mark.parametrize("device", ["/dev/zero", "/dev/urandom"])
def test_devices_as_a_trace(device):
    rc, mb, secs, err = spectui_peak("replay", device, "--headless")
    assert rc == 2 and "Traceback" not in err and mb < 100 and secs < 20, (rc, mb, secs, err)


@pytest.mark.slow  # seconds of processes or large inputs: the full suite runs it, the fast lane does not
@pytest.mark.parametrize("device", ["/dev/zero", "/dev/urandom"])
def test_devices_as_prompts_are_refused_before_any_request(device):
    srv = FakeServer("ok")
    try:
        rc, mb, secs, err = spectui_peak("bench", "--url", srv.url, "--prompts", device, "--limit", "1", "-n", "4")
        assert rc == 2 and f"larger than {MAX_PROMPT_FILE_BYTES >> 20} MiB" in err and mb < 100, (rc, mb, err)
        assert srv.requests == 0  # checked before any work
    finally:
        srv.stop()


def test_reader_limits_with_small_values(tmp_path, monkeypatch):
    """The same limits, made small: each is one TraceLimitError naming it (and nothing read past it)."""
    good = tmp_path / "good.jsonl"
    write_trace(good, synthetic_run(30))
    n_lines = len(good.read_bytes().splitlines())
    longest = max(len(x) for x in good.read_bytes().splitlines())
    header, reader = iter_trace(good)
    assert sum(1 for _ in reader) == n_lines - 1  # within the limits: all of it

    monkeypatch.setattr(tr, "MAX_LINES", n_lines - 5)
    header, reader = iter_trace(good)
    with pytest.raises(TraceLimitError, match=f"more than {n_lines - 5} lines"):
        list(reader)
    monkeypatch.setattr(tr, "MAX_LINES", 50_000_000)
    monkeypatch.setattr(tr, "MAX_LINE_BYTES", longest - 1)
    with pytest.raises(TraceLimitError, match="longer than"):
        header, reader = iter_trace(good)
        list(reader)
    monkeypatch.setattr(tr, "MAX_LINE_BYTES", 16 << 20)
    monkeypatch.setattr(tr, "MAX_TRACE_BYTES", good.stat().st_size // 2)
    with pytest.raises(TraceLimitError, match="MiB of data"):
        header, reader = iter_trace(good)
        list(reader)
    gz = tmp_path / "good.jsonl.gz"
    write_trace(gz, synthetic_run(30))
    with pytest.raises(TraceLimitError, match="MiB of data"):
        header, reader = iter_trace(gz)
        list(reader)


@pytest.mark.slow  # seconds of processes or large inputs: the full suite runs it, the fast lane does not
def test_limits_keep_every_ordinary_trace_whole(tmp_path):
    """A long trace, plain and gzip, reads exactly as before (the line splitter across 1 MiB blocks)."""
    for name in ("long.jsonl", "long.jsonl.gz"):
        p = tmp_path / name
        write_trace(p, synthetic_run(4000, seed=9))
        header, reader = iter_trace(p)
        events = list(reader)
        assert len(events) == 4000 + 4 and not reader.warnings  # start, prefill, passes, settings, end


def test_a_bom_before_the_header_is_accepted(tmp_path):
    good = tmp_path / "good.jsonl"
    write_trace(good, synthetic_run(5))
    bom = tmp_path / "bom.jsonl"
    bom.write_bytes(b"\xef\xbb\xbf" + good.read_bytes())
    h1, r1 = iter_trace(good)
    h2, r2 = iter_trace(bom)
    assert h1 == h2 and list(r1) == list(r2)


@pytest.mark.slow  # seconds of processes or large inputs: the full suite runs it, the fast lane does not
def test_prompt_set_limits(tmp_path):
    many = tmp_path / "many.txt"
    many.write_text("p\n" * (MAX_PROMPTS + 1))
    with pytest.raises(SpectuiError, match=f"more than {MAX_PROMPTS} prompts"):
        load_prompts(str(many))
    long_line = tmp_path / "long.jsonl"
    long_line.write_text(json.dumps({"question_id": 1, "category": "c", "turns": ["x" * (2 << 20)]}) + "\n")
    with pytest.raises(SpectuiError, match="line 1 is longer than 1 MiB"):
        load_prompts(str(long_line))


@pytest.mark.slow  # seconds of processes or large inputs: the full suite runs it, the fast lane does not
def test_an_endless_stream_line_is_refused_in_bounded_memory():
    """attach -p against a server streaming one line that never ends: the request fails with the limit's
    line, exit 1, in bounded memory, in seconds."""
    srv = FakeServer("endless")
    try:
        rc, mb, secs, err = spectui_peak("attach", srv.url, "-p", "hi", "-n", "8", "--headless", "--duration", "20")
        assert rc == 1 and "a stream line longer than 1 MiB" in err, (rc, err)
        assert mb < 100 and secs < 15, (mb, secs)
    finally:
        srv.stop()


@pytest.mark.slow  # seconds of processes or large inputs: the full suite runs it, the fast lane does not
def test_bench_against_an_endless_stream_line():
    srv = FakeServer("endless")
    try:
        rc, mb, secs, err = spectui_peak("bench", "--url", srv.url, "--limit", "1", "-n", "4", "--timeout", "20")
        assert rc == 1 and "Traceback" not in err and mb < 120 and secs < 30, (rc, mb, secs, err)
    finally:
        srv.stop()


def test_trace_error_is_a_spectui_error():
    assert issubclass(TraceLimitError, TraceError)
    t0 = time.monotonic()
    with pytest.raises(TraceLimitError):
        header, reader = iter_trace("/dev/zero")
    assert time.monotonic() - t0 < 5
