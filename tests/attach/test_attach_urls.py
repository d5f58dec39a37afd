"""attach's URLs checked before the first scrape (spectui.attach.urls): what passes, and the one line each
bad form gets (exit status 2 through the command: tests/commands/test_exit_statuses.py)."""

from __future__ import annotations

import pytest

from spectui.attach.urls import check_url, check_urls
from spectui.contract.errors import SpectuiError


@pytest.mark.parametrize("url, expect", [
    ("127.0.0.1:8080", "http://127.0.0.1:8080"),
    ("http://127.0.0.1:8080", "http://127.0.0.1:8080"),
    ("https://example.org/v1/metrics", "https://example.org/v1/metrics"),
    ("  http://h:1  ", "http://h:1"),
    ("http://[::1]:8080", "http://[::1]:8080"),
    ("http://localhost", "http://localhost"),
    ("http://h:65535", "http://h:65535"),
])
def test_good_urls(url, expect):
    assert check_url(url) == expect


@pytest.mark.parametrize("url, message", [
    ("", "an empty URL"),
    ("   ", "an empty URL"),
    ("htp:/bad url", "contains a space"),
    ("htp:/bad", "expected SCHEME://HOST"),
    ("ftp://h:21", "scheme 'ftp' is not http or https"),
    ("file:///etc/passwd", "scheme 'file' is not http or https"),
    ("http://:8080", "has no host"),
    ("http://", "has no host"),
    ("http://127.0.0.1:99999", "port 99999 is not between 1 and 65535"),
    ("http://127.0.0.1:0", "port 0 is not between 1 and 65535"),
    ("http://h:port", "port 'port' is not a number"),
    ("http://h:", "empty port"),
    ("http://h_o$t:1", "is not a host name"),
])
def test_bad_urls_are_one_line(url, message):
    with pytest.raises(SpectuiError) as info:
        check_url(url)
    text = str(info.value)
    assert message in text and "\n" not in text and text.startswith("attach: ")


def test_the_same_server_twice_is_refused():
    with pytest.raises(SpectuiError, match="the same server"):
        check_urls(["http://h:1", "h:1/metrics"])
    assert check_urls(["http://h:1", "http://h:2"]) == ["http://h:1", "http://h:2"]
