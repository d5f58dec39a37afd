"""The second hostile-input report's `spectui serve` rows, re-run (issue 37, items 1 and 5): SV06 (any
Origin, no token, no cap), SV07 (a 20000 x 20000 terminal that grew a session past 3.6 GB and outlived its
socket), SV09 (a traceback at shutdown after a session was killed), and the 17 held probes (traversals, the
static listing, ESC in the query string, a 1 MB header, a frame claiming 2^63-1 bytes, slowloris, HTML in a
name). Each case runs against a real `spectui serve demo` (tests/hostile/serve_cases.py) and prints its wall
time and peak memory; `benchmarks/serve_hostile.py` prints the same as one table. The rules themselves
(token, Origin, size) are checked first, as functions."""

from __future__ import annotations

import pytest
from serve_cases import CASES, run

from spectui.serve.guard import (
    MAX_COLUMNS,
    MAX_ROWS,
    origin_allowed,
    origin_of,
    page_origins,
    page_url,
    terminal_size,
    token_matches,
)


def test_terminal_size_is_capped_and_defaults_on_junk():
    assert terminal_size("20000", "20000") == (MAX_COLUMNS, MAX_ROWS) == (500, 200)
    assert terminal_size(20000, 20000) == (500, 200)
    assert terminal_size("80", "24") == (80, 24)
    assert terminal_size("0", "-5") == (1, 1)
    for junk in (None, "", "x", "1e9", "9" * 5000, True, [], {}, 1.5e400):
        assert terminal_size(junk, junk) in ((80, 24), (500, 200))
    assert terminal_size("x", None) == (80, 24) and terminal_size(True, False) == (80, 24)


def test_the_token_is_compared_whole():
    assert token_matches("abc", "abc")
    assert not token_matches("ab", "abc") and not token_matches("", "abc") and not token_matches(None, "abc")
    assert not token_matches(["abc"], "abc") and not token_matches("abc\x00", "abc")
    assert page_url("http://127.0.0.1:8000", "T") == "http://127.0.0.1:8000/?token=T"
    assert page_url("https://room.example/", "T") == "https://room.example/?token=T"


def test_only_the_pages_own_origin_opens_a_websocket():
    local = page_origins("http://127.0.0.1:8000", "127.0.0.1", 8000)
    assert local == {"http://127.0.0.1:8000", "http://localhost:8000", "http://[::1]:8000"}
    for ok in ("http://127.0.0.1:8000", "http://localhost:8000", "HTTP://LOCALHOST:8000", "http://[::1]:8000"):
        assert origin_allowed(ok, local), ok
    for bad in (None, "", "null", "http://evil.example", "http://127.0.0.1:8001", "https://127.0.0.1:8000",
                "http://127.0.0.1", "http://127.0.0.1:8000.evil.example", "http://evil.example/http://127.0.0.1:8000",
                "http://127.0.0.2:8000", "file://", "http://user@127.0.0.1:8000"):
        assert not origin_allowed(bad, local), bad
    public = page_origins("https://room.example", "10.0.0.5", 8000)
    assert public == {"https://room.example"}
    every = "0.0.0.0"  # noqa: S104 (an address as --host gives it, not a bind)
    assert page_origins(f"http://{every}:8000", every, 8000) >= {f"http://{every}:8000", "http://localhost:8000"}
    assert origin_of("http://Room.Example:80/x") == "http://room.example" and origin_of("nonsense") == ""


@pytest.mark.slow  # a real serve and its sessions' processes, for seconds each
@pytest.mark.parametrize("name", sorted(CASES))
def test_the_reports_serve_rows_hold(name):
    out = run(name)
    print(f"\n{out.case}: {'held' if out.held else 'FAILED'}, {out.wall_s:.1f} s, peak {out.total_mb:.0f} MB "
          f"(largest child {out.child_mb:.0f} MB, at most {out.children} children)")
    for note in out.notes:
        print("   ", note)
    assert out.held, "\n".join(out.notes)
