"""Traces: header, round trip, SIGKILL safety, save_to, and the reader's errors (plus a property test)."""

from __future__ import annotations

import gzip
import json
import os
import signal
import subprocess
import sys
import textwrap
import time

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from spectui import __version__
from spectui.contract.event_json import from_dict, to_dict
from spectui.contract.events import RunEnded, RunStarted
from spectui.recording.trace import (
    SCHEMA,
    VERSION,
    TraceError,
    TraceWarning,
    TraceWriter,
    iter_trace,
    read_trace,
    synthetic_run,
    write_trace,
)

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
EVENTS = list(synthetic_run(60, seed=3))


def _lines(path):
    with open(path, "rb") as fh:
        return fh.read().splitlines(keepends=True)


# ------------------------------------------------------------------ header and round trip


def test_header_is_made_from_the_start_event(tmp_path):
    p = tmp_path / "t.jsonl"
    write_trace(p, EVENTS, header_extra={"argv": ["spectui", "--headless"], "schema": "ignored"})
    header = json.loads(_lines(p)[0])
    start = EVENTS[0]
    assert isinstance(start, RunStarted)
    assert header["schema"] == SCHEMA and header["version"] == VERSION and header["spectui"] == __version__
    assert header["created"].startswith("2023-11-14T22:13:20")  # started_at 1_700_000_000 in UTC
    assert header["models"]["target"]["path"] == start.target.path
    assert header["models"]["target"]["name"] == "synthetic target"
    assert set(header["models"]["target"]) >= {"path", "name", "size_bytes", "quantization", "n_params", "n_vocab"}
    assert header["models"]["draft"]["path"] == start.draft.path
    assert header["params"]["n_predict"] == start.n_predict
    assert header["params"]["settings"]["draft_max"] == start.settings.draft_max
    assert header["prompt"] == start.prompt
    assert header["machine"]["cpu"] and header["machine"]["threads"] == start.threads
    assert header["machine"]["cpu_count"] == os.cpu_count()
    assert header["argv"] == ["spectui", "--headless"]
    # then one line per event, exactly to_dict
    body = [json.loads(line) for line in _lines(p)[1:]]
    assert body == [json.loads(json.dumps(to_dict(e))) for e in EVENTS]


@pytest.mark.parametrize("name", ["t.jsonl", "t.jsonl.gz"])
def test_round_trip_plain_and_gzip(tmp_path, name):
    p = tmp_path / name
    assert write_trace(p, EVENTS) == len(EVENTS)
    tr = read_trace(p)
    assert tr.events == EVENTS
    assert tr.warnings == []
    assert tr.header["prompt"] == "synthetic"
    if name.endswith(".gz"):
        assert _lines(p)[0][:2] == b"\x1f\x8b"


def test_header_without_start_event(tmp_path):
    p = tmp_path / "t.jsonl"
    write_trace(p, EVENTS[1:5])
    tr = read_trace(p)
    assert tr.events == EVENTS[1:5]
    assert "models" not in tr.header and tr.header["schema"] == SCHEMA


def test_empty_recording_is_a_valid_trace(tmp_path):
    """A recording that saw no event leaves no file (issue 17: a run that fails before its first event
    leaves no empty file behind); saved before any event, a header alone is still a valid trace."""
    p = tmp_path / "t.jsonl"
    TraceWriter(p).close()
    assert not p.exists()
    w = TraceWriter(None)
    w.save_to(p)
    w.close()
    tr = read_trace(p)
    assert tr.events == [] and tr.header["version"] == VERSION


# ------------------------------------------------------------------ versions: 2 adds the attach events


def test_version_1_traces_still_read(tmp_path):
    """A version-1 trace (run events only, as every spectui before attach wrote them) reads unchanged:
    one written here with a version-1 header, and the demo's first recording (version 1, kept in
    tests/data when the bundled demo was re-recorded as version 3)."""
    p = tmp_path / "v1.jsonl"
    lines = [json.dumps({"schema": SCHEMA, "version": 1, "spectui": "0.1.0"})]
    lines += [json.dumps(to_dict(e)) for e in EVENTS]
    p.write_text("\n".join(lines) + "\n")
    tr = read_trace(p)
    assert tr.header["version"] == 1 and tr.events == EVENTS and tr.warnings == []
    old = os.path.join(REPO, "tests", "data", "trace-v1-demo-act1.jsonl.gz")
    tr = read_trace(old)
    assert tr.header["version"] == 1 and isinstance(tr.events[0], RunStarted) and isinstance(tr.events[-1], RunEnded)


def test_real_version_1_and_2_recordings_read_without_inspector_data_and_the_demo_has_it():
    """The demo's recordings before the inspector (version 1 act 1, version 2 act 2: real Qwen runs) read
    with no inspector data; the bundled demo, re-recorded as version 3, has it on every pass, and its
    tokens are the old recording's (the same run, a newer trace)."""
    from spectui.contract.events import PassEvent

    def passes(path):
        return [e for e in read_trace(path).events if isinstance(e, PassEvent)]

    for name, version in (("trace-v1-demo-act1.jsonl.gz", 1), ("trace-v2-demo-act2.jsonl.gz", 2)):
        path = os.path.join(REPO, "tests", "data", name)
        assert read_trace(path).header["version"] == version
        old = passes(path)
        assert len(old) > 100 and all(p.inspect == () and p.draft_stop == "" for p in old)
        new_name = "demo-trace.jsonl.gz" if version == 1 else "demo-act2.jsonl.gz"
        new_path = os.path.join(REPO, "spectui", "data", new_name)
        assert read_trace(new_path).header["version"] == VERSION
        new = passes(new_path)
        assert all(len(p.inspect) == len(p.drafts) + 1 for p in new)
        assert [t.id for p in new for t in p.emitted] == [t.id for p in old for t in p.emitted]


def test_attach_trace_round_trip_and_header(tmp_path):
    """Version 2: the attach events round-trip through the same writer and reader; the header of an
    attach trace names the watched URLs and the scrape interval (no models: attach loads none)."""
    from spectui.contract import events as ev

    hist = ev.Histogram((ev.Bucket(0.1, 1.0), ev.Bucket(0.5, 3.0)), 4.0, 0.9)
    eng = ev.EngineCounters(engine="0", model="m", speculation=True, num_drafts=3, num_draft_tokens=9,
                            num_accepted_tokens=5, accepted_per_pos=(ev.PositionCount(0, 3.0),), ttft=hist)
    evs = [
        ev.AttachStarted(started_at=1_700_000_000.0, targets=(ev.Target("http://a:1"), ev.Target("http://b:2")),
                         interval=0.5),
        ev.MetricsScraped(url="http://a:1", t=0.5, kind=ev.KIND_VLLM, engines=(eng,)),
        ev.MetricsScraped(url="http://b:2", t=0.5, error="connection refused"),
        ev.RequestStarted(url="http://a:1", t=0.6, api="openai", prompt="p", n_predict=3),
        ev.RequestChunk(t=0.7, text="é🙂", draft_n=3, draft_n_accepted=2),
        ev.RequestEnded(t=0.8, reason=ev.REQ_LENGTH, n_tokens=3),
        ev.AttachEnded(t=1.0, reason="done"),
    ]
    for name in ("a.jsonl", "a.jsonl.gz"):
        p = tmp_path / name
        write_trace(p, evs)
        tr = read_trace(p)
        assert tr.events == evs and tr.warnings == []
        assert tr.header["version"] == VERSION == 3
        assert tr.header["attach"]["targets"] == ["http://a:1", "http://b:2"]
        assert tr.header["attach"]["interval"] == 0.5
        assert tr.header["created"].startswith("2023-11-14T22:13:20") and "models" not in tr.header
    bad = to_dict(evs[1])
    bad["kind"] = "tgi"
    with pytest.raises(ValueError, match="MetricsScraped.kind: expected one of"):
        from_dict(bad)


def test_streaming_reader_is_lazy(tmp_path):
    p = tmp_path / "t.jsonl"
    write_trace(p, EVENTS)
    header, reader = iter_trace(p)
    assert header["schema"] == SCHEMA
    first = next(reader)
    assert first == EVENTS[0]
    assert reader.n_events == 1  # only what was asked for has been parsed
    assert list(reader) == EVENTS[1:]


@pytest.mark.parametrize("gz", [False, True])
def test_every_event_is_flushed_as_written(tmp_path, gz):
    p = tmp_path / ("live.jsonl.gz" if gz else "live.jsonl")
    w = TraceWriter(p)
    for i, ev in enumerate(EVENTS[:20]):
        w.write(ev)
        # another reader sees every event so far, while the writer is still open
        assert read_trace(p).events == EVENTS[: i + 1]
    w.close()


@pytest.mark.parametrize("src,dest", [(None, "s.jsonl"), ("live.jsonl", "s.jsonl.gz"), ("live.jsonl.gz", "s.jsonl")])
def test_save_to_writes_what_was_recorded_so_far(tmp_path, src, dest):
    w = TraceWriter(None if src is None else tmp_path / src, {"note": "x"})
    for ev in EVENTS[:30]:
        w.write(ev)
    assert w.save_to(tmp_path / dest) == 30
    for ev in EVENTS[30:40]:
        w.write(ev)  # the recording goes on after a save
    saved = read_trace(tmp_path / dest)
    assert saved.events == EVENTS[:30] and saved.header["note"] == "x" and saved.warnings == []
    w.save_to(tmp_path / dest)
    assert read_trace(tmp_path / dest).events == EVENTS[:40]
    w.close()
    if src is not None:
        assert read_trace(tmp_path / src).events == EVENTS[:40]


def test_writer_errors_are_trace_errors(tmp_path):
    with pytest.raises(TraceError, match="cannot write trace"):
        TraceWriter(tmp_path / "no" / "such" / "dir.jsonl")
    w = TraceWriter(tmp_path / "t.jsonl")
    w.write(EVENTS[0])
    with pytest.raises(TraceError, match="cannot save trace"):
        w.save_to(tmp_path / "missing-dir" / "x.jsonl")
    w.close()
    with pytest.raises(TraceError, match="closed"):
        w.write(EVENTS[1])


_KILL_SCRIPT = textwrap.dedent(
    """
    import sys, time
    from spectui.recording.trace import TraceWriter, synthetic_run
    w = TraceWriter(sys.argv[1])
    for i, ev in enumerate(synthetic_run(100000, seed=5)):
        w.write(ev)
        if i == 50:
            print("ready", flush=True)
        if i > 50:
            time.sleep(0.0005)
    """
)


@pytest.mark.parametrize("name", ["killed.jsonl", "killed.jsonl.gz"])
@pytest.mark.slow  # a killed process / many generated inputs
def test_sigkill_mid_run_leaves_a_readable_trace(tmp_path, name):
    p = tmp_path / name
    proc = subprocess.Popen(
        [sys.executable, "-c", _KILL_SCRIPT, str(p)], stdout=subprocess.PIPE, cwd=REPO,
        env={**os.environ, "PYTHONPATH": REPO},
    )
    assert proc.stdout.readline().strip() == b"ready"
    time.sleep(0.3)
    proc.send_signal(signal.SIGKILL)
    proc.wait()
    warned: list[str] = []
    tr = read_trace(p, on_warning=warned.append)
    assert len(tr.events) > 51
    expected = list(synthetic_run(100000, seed=5))[: len(tr.events)]
    assert tr.events == expected
    assert not any(isinstance(e, RunEnded) for e in tr.events)
    assert tr.warnings == warned  # maybe empty (killed between two lines), else one warning
    assert len(warned) <= 1


def test_damaged_last_line_is_a_warning(tmp_path):
    p = tmp_path / "t.jsonl"
    write_trace(p, EVENTS)
    data = p.read_bytes()
    p.write_bytes(data[:-25])
    with pytest.warns(TraceWarning, match="line 65: truncated line; .* 63 events read"):
        header, reader = iter_trace(p)
        events = list(reader)
    assert events == EVENTS[:-1]
    # also with trailing garbage after a complete last line
    p.write_bytes(data + b"\x00\xff garbage")
    tr = read_trace(p)
    assert tr.events == EVENTS and len(tr.warnings) == 1 and "not UTF-8" in tr.warnings[0]


def test_damage_in_the_middle_is_an_error_after_the_passes_before_it(tmp_path):
    p = tmp_path / "t.jsonl"
    write_trace(p, EVENTS)
    lines = _lines(p)
    lines[10] = b'{"type": "pass", "index": "ten"}\n'
    p.write_bytes(b"".join(lines))
    header, reader = iter_trace(p)
    got = []
    with pytest.raises(TraceError, match=r"line 11: not an event \(PassEvent.index: expected an integer, got str\)"):
        for ev in reader:
            got.append(ev)
    assert got == EVENTS[:9]


@pytest.mark.parametrize(
    "content,message",
    [
        (b"", "empty file, not a spectui trace"),
        (b"hello world\n", "not JSON, not a spectui trace"),
        (b'{"schema": "spectui.trace", "vers', "truncated header line"),
        (b"[1, 2, 3]\n", "JSON but not a spectui trace"),
        (b'{"type": "pass"}\n', "JSON but not a spectui trace"),
        (b'{"schema": "asciicast", "version": 2}\n', "schema 'asciicast' is not a spectui trace"),
        (b'{"schema": "spectui.trace", "version": 7}\n', r"trace version 7 \(written by a newer spectui\)"),
        (b'{"schema": "spectui.trace", "version": 0}\n', "trace version 0 \\(an unsupported old format\\)"),
        (b'{"schema": "spectui.trace", "version": "1"}\n', "no valid version"),
        (b"\x1f\x8b\x08\x00garbage", "gzip file with compressed data cut short"),
        (b"\x1f\x8b\x08\x00\x00\x00\x00\x00\x00\x03\xff\xff\xff\xff", "gzip file with damaged compressed data"),
        (gzip.compress(b"plain text\n", mtime=0), "not JSON"),
    ],
)
def test_bad_files_give_one_line_errors_naming_the_versions(tmp_path, content, message):
    p = tmp_path / "bad"
    p.write_bytes(content)
    with pytest.raises(TraceError, match=message) as info:
        iter_trace(p)
    text = str(info.value)
    assert "\n" not in text and text.startswith(str(p))
    assert "this spectui reads trace version 1" in text


def test_missing_and_directory(tmp_path):
    with pytest.raises(TraceError, match="no such file"):
        iter_trace(tmp_path / "nope.jsonl")
    with pytest.raises(TraceError, match="is a directory"):
        iter_trace(tmp_path)


# ------------------------------------------------------------------ property-based


def _read_all(path):
    """Read a file as a trace. Returns (header, events, error): only TraceError may escape."""
    got = []
    try:
        header, reader = iter_trace(path, on_warning=lambda m: None)
        for ev in reader:
            got.append(ev)
    except TraceError as exc:
        return None, got, exc
    return header, got, None


_VALID = {}


def _valid_trace_bytes(gz: bool) -> bytes:
    if gz not in _VALID:
        import tempfile

        with tempfile.TemporaryDirectory() as d:
            p = os.path.join(d, "t.jsonl.gz" if gz else "t.jsonl")
            w = TraceWriter(p)  # flushed per event, as a live recording is
            for ev in EVENTS:
                w.write(ev)
            w.close()
            with open(p, "rb") as fh:
                _VALID[gz] = fh.read()
    return _VALID[gz]


HSET = settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])

json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=20),
    lambda children: st.lists(children, max_size=4) | st.dictionaries(st.text(max_size=8), children, max_size=4),
    max_leaves=20,
)


@HSET
@given(data=st.binary(max_size=2000))
def test_random_bytes_only_raise_trace_error(tmp_path, data):
    p = tmp_path / "random.bin"
    p.write_bytes(data)
    _read_all(p)


@HSET
@given(data=st.binary(max_size=500))
def test_random_bytes_after_a_valid_header(tmp_path, data):
    p = tmp_path / "random.jsonl"
    header = json.dumps({"schema": SCHEMA, "version": VERSION}).encode() + b"\n"
    p.write_bytes(header + data)
    _read_all(p)


@HSET
@given(
    values=st.lists(json_values, min_size=1, max_size=6),
    with_header=st.booleans(),
    event_like=st.lists(
        st.fixed_dictionaries({"type": st.sampled_from(["start", "pass", "settings", "end", "x"])}, optional={
            "index": json_values, "drafts": json_values, "emitted": json_values, "target": json_values,
            "settings": json_values, "timing": json_values, "draft": json_values, "old": json_values,
        }),
        max_size=4,
    ),
)
@pytest.mark.slow  # a killed process / many generated inputs
def test_random_json_only_raises_trace_error(tmp_path, values, with_header, event_like):
    p = tmp_path / "random.jsonl"
    lines = [json.dumps(v) for v in values] + [json.dumps(v) for v in event_like]
    if with_header:
        lines.insert(0, json.dumps({"schema": SCHEMA, "version": VERSION}))
    p.write_text("\n".join(lines) + "\n")
    header, got, err = _read_all(p)
    for ev in got:  # whatever was accepted is a well-typed event
        assert from_dict(json.loads(json.dumps(to_dict(ev)))) == ev


@HSET
@given(gz=st.booleans(), cut=st.floats(min_value=0.0, max_value=1.0))
def test_valid_trace_cut_anywhere_keeps_every_complete_event(tmp_path, gz, cut):
    data = _valid_trace_bytes(gz)
    n = int(len(data) * cut)
    p = tmp_path / ("cut.jsonl.gz" if gz else "cut.jsonl")
    p.write_bytes(data[:n])
    header, got, err = _read_all(p)
    plain = gzip.decompress(data) if gz else data
    if gz:  # how much of the text a decoder can recover from the first n compressed bytes
        import zlib

        d = zlib.decompressobj(16 + zlib.MAX_WBITS)
        recovered = d.decompress(data[:n])
    else:
        recovered = data[:n]
    complete_lines = recovered.count(b"\n")
    if complete_lines == 0:
        # the header itself is cut: not a trace (unless the cut left the header's JSON whole)
        if err is None:
            assert got == []
        return
    assert err is None, err
    assert got == EVENTS[: len(got)]
    assert len(got) >= complete_lines - 1  # every event whose line was complete is there
    assert plain.startswith(recovered)


@HSET
@given(pos=st.floats(min_value=0.0, max_value=0.999), byte=st.integers(0, 255))
def test_a_damaged_byte_never_loses_the_events_before_it(tmp_path, pos, byte):
    data = bytearray(_valid_trace_bytes(False))
    i = int(len(data) * pos)
    data[i] = byte
    p = tmp_path / "damaged.jsonl"
    p.write_bytes(bytes(data))
    header, got, err = _read_all(p)
    complete_before = bytes(data[:i]).count(b"\n")  # lines wholly before the damaged byte
    if complete_before == 0:
        return  # the header is damaged: an error or, if still a valid header, anything well-formed
    assert len(got) >= complete_before - 1
    assert got[: complete_before - 1] == EVENTS[: complete_before - 1]


def test_core_does_not_import_textual():
    code = "import sys, spectui.recording.trace, spectui.contract.events; print('textual' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=REPO, check=True)
    assert out.stdout.strip() == "False"


@pytest.mark.skipif(not os.path.exists("/dev/full"), reason="needs /dev/full")
def test_a_full_disk_is_a_trace_error_not_a_traceback():
    w = TraceWriter("/dev/full")
    with pytest.raises(TraceError, match="cannot write trace /dev/full: No space left"):
        for ev in EVENTS:
            w.write(ev)
    w.close()  # the failure was reported once: closing does not raise it again
    w2 = TraceWriter("/dev/full", flush_each=False)
    w2.write(EVENTS[0])  # buffered
    with pytest.raises(TraceError, match="No space left"):
        w2.close()
