"""Values (issue 26, part 5): NaN, Inf and out-of-range numbers refused at the option (exit 2, naming it) and
in traces and metrics (a warning or an error naming the field); impossible counters named; URL credentials
never printed; `serve --host ""` refused; the JSON output strict RFC 8259."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import click
import pytest
from click.testing import CliRunner
from fake_servers import FakeServer, vllm_metrics

from spectui.attach import metrics
from spectui.attach.scraper import Scraper
from spectui.attach.urls import check_url, redact
from spectui.contract.errors import SpectuiError
from spectui.contract.params import SECONDS, Finite
from spectui.recording.trace import iter_trace, synthetic_run, write_trace

REPO = Path(__file__).resolve().parents[2]


def spectui(*args: str) -> subprocess.CompletedProcess:
    env = dict(os.environ, PYTHONPATH=str(REPO))
    return subprocess.run([sys.executable, "-m", "spectui", *args], stdin=subprocess.DEVNULL, capture_output=True,
                          env=env, timeout=120)


def test_finite_refuses_nan_and_inf_naming_the_option():
    @click.command()
    @click.option("--timeout", type=SECONDS)
    @click.option("--x", type=Finite(min=0.0, max=1.0))
    def cmd(timeout, x):
        click.echo(f"{timeout} {x}")

    r = CliRunner().invoke(cmd, ["--timeout", "2.5", "--x", "0.5"])
    assert r.exit_code == 0 and r.output == "2.5 0.5\n"
    for args, opt in ((["--timeout", "nan"], "--timeout"), (["--timeout", "inf"], "--timeout"),
                      (["--timeout", "-5"], "--timeout"), (["--x", "1.5"], "--x"), (["--x", "NaN"], "--x"),
                      (["--x", "abc"], "--x")):
        r = CliRunner().invoke(cmd, args)
        assert r.exit_code == 2 and f"'{opt}'" in r.output, (args, r.output)


@pytest.mark.parametrize("args", [
    ["attach", "http://127.0.0.1:1", "--interval", "nan", "--headless", "--count", "1"],
    ["attach", "http://127.0.0.1:1", "--interval", "inf", "--headless", "--count", "1"],
    ["attach", "http://127.0.0.1:1", "--timeout", "inf", "--headless", "--count", "1"],
    ["attach", "http://127.0.0.1:1", "--duration", "nan", "--headless"],
    ["bench", "--url", "http://127.0.0.1:1", "--timeout", "nan", "--limit", "1"],
    ["bench", "--url", "http://127.0.0.1:1", "--timeout", "-5", "--limit", "1"],
    ["--temp", "nan", "--headless"],
])
@pytest.mark.slow  # seconds of processes or large inputs: the full suite runs it, the fast lane does not
def test_the_commands_refuse_nan_inf_at_the_option(args):
    r = spectui(*args)
    opt = next(a for a in args if a in ("--interval", "--timeout", "--duration", "--temp"))
    assert r.returncode == 2 and f"'{opt}'".encode() in r.stderr and b"Traceback" not in r.stderr, r.stderr


@pytest.mark.parametrize("mode,needle", [("nan", "= nan"), pytest.param("inf", "= inf", marks=pytest.mark.slow),
                                          pytest.param("neg", "= -5", marks=pytest.mark.slow),
                                          ("accgtdraft", "accepted tokens > ")])  # fast lane: nan, accepted > drafted
@pytest.mark.slow  # seconds of processes or large inputs: the full suite runs it, the fast lane does not
def test_impossible_counters_are_named(mode, needle):
    srv = FakeServer(mode)
    s = Scraper([srv.url], timeout=2.0)
    try:
        (ev,) = s.scrape_all()
        assert "impossible counter" in ev.error and needle in ev.error, ev.error
        r = spectui("attach", srv.url, "--headless", "--count", "2", "--interval", "0.5")
        assert b"impossible counter" in r.stdout + r.stderr and b"50000" not in r.stdout
        assert b"no speculation" not in r.stdout
    finally:
        s.close()
        srv.stop()


def test_well_formed_counters_still_parse():
    (e,) = metrics.parse(vllm_metrics(10, 20, 12, 40)).engines
    assert (e.num_drafts, e.num_draft_tokens, e.num_accepted_tokens) == (10, 20, 12)


@pytest.mark.slow  # seconds of processes or large inputs: the full suite runs it, the fast lane does not
def test_url_credentials_are_refused_and_never_printed():
    assert redact("http://user:secret@h:1/x") == "http://***@h:1/x"
    with pytest.raises(SpectuiError) as info:
        check_url("http://alice:s3cr3t@127.0.0.1:8080")
    assert "s3cr3t" not in str(info.value) and "alice" not in str(info.value) and "***@" in str(info.value)
    r = spectui("attach", "http://alice:s3cr3t@127.0.0.1:9", "--headless", "--count", "1")
    assert r.returncode == 2 and b"s3cr3t" not in r.stdout + r.stderr and b"alice" not in r.stdout + r.stderr
    r = spectui("bench", "--url", "http://alice:s3cr3t@127.0.0.1:9", "--limit", "1")
    assert r.returncode == 2 and b"s3cr3t" not in r.stdout + r.stderr
    for bad in ("http://[::1:8080", "http://[::1", "http://\x1b]0;X:1"):
        with pytest.raises(SpectuiError, match="not a URL"):
            check_url(bad)


@pytest.mark.slow  # seconds of processes or large inputs: the full suite runs it, the fast lane does not
def test_serve_refuses_an_empty_host_and_an_unknown_command():
    r = spectui("serve", "--host", "", "--port", "18203")
    assert r.returncode == 2 and b"--host is empty" in r.stderr
    r = spectui("serve", "nosuchcommand", "--port", "18204")
    assert r.returncode == 2 and b"no such command 'nosuchcommand'" in r.stderr


@pytest.mark.slow  # seconds of processes or large inputs: the full suite runs it, the fast lane does not
@pytest.mark.parametrize("value,word", [("NaN", "NaN"), ("Infinity", "Infinity"), ("-Infinity", "-Infinity")])
def test_non_finite_values_in_a_trace_are_named_once(tmp_path, value, word):
    good = tmp_path / "good.jsonl"
    write_trace(good, synthetic_run(10))
    lines = good.read_text().splitlines()
    out = []
    for line in lines:
        d = json.loads(line)
        if d.get("type") == "pass":
            d["timing"]["wall_ms"] = "@@"
            line = json.dumps(d).replace('"@@"', value)
        out.append(line)
    bad = tmp_path / "bad.jsonl"
    bad.write_text("\n".join(out) + "\n")
    warnings: list[str] = []
    header, reader = iter_trace(bad, on_warning=warnings.append)
    events = list(reader)
    assert len(events) == len(lines) - 1
    assert len(warnings) == 1 and f"PassEvent.timing.wall_ms is {word}" in warnings[0]
    r = spectui("replay", str(bad), "--headless", "--json")
    assert r.returncode == 0
    json.loads(r.stdout, parse_constant=lambda c: pytest.fail(f"bare {c} in --json"))
    r = spectui("replay", str(bad), "--headless")
    assert b"nan" not in r.stdout.lower().replace(b"n_predict", b"") or b" nan " not in r.stdout


def test_negative_pass_times_are_named(tmp_path):
    good = tmp_path / "good.jsonl"
    write_trace(good, synthetic_run(10))
    out = []
    for line in good.read_text().splitlines():
        d = json.loads(line)
        if d.get("type") == "pass":
            d["timing"]["verify_ms"] = -999.0
        out.append(json.dumps(d))
    bad = tmp_path / "neg.jsonl"
    bad.write_text("\n".join(out) + "\n")
    warnings: list[str] = []
    header, reader = iter_trace(bad, on_warning=warnings.append)
    events = list(reader)
    assert warnings == [f"{bad}: line 3: PassEvent.timing.verify_ms is negative (-999; a time is not); read as 0 "
                        "(and so wherever it occurs again)"]
    assert all(e.timing.verify_ms == 0.0 for e in events if hasattr(e, "timing"))
