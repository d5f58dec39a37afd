"""The recorded attach sessions the attach TUI tests replay (tests/data/attach-*.jsonl), and how they were made.

``python tests/attach_recordings.py`` records them again from the real llama-server
(scripts/build-llama-server.sh) on the tiny GGUF models (tests/tinymodels.py), on 127.0.0.1:

- ``attach-watch.jsonl``: ``spectui attach URL1 URL2 URL3 --interval 0.5 --count 8 --record ...`` where URL1
  speculates (noisy draft, ``--spec-draft-n-max 3``), URL2 serves the same target without speculation and
  URL3 is a closed port; a client sends a request to URL1 and URL2 every ~0.6 s meanwhile.
- ``attach-request.jsonl``: ``spectui attach URL1 -p PROMPT -n 48 --record ...`` (request mode).

``python tests/attach_recordings.py --screenshot [--qwen]`` saves docs/attach-screenshot.svg: the attach TUI
watching the tiny pair (and with ``--qwen`` the Qwen2.5-Coder 1.5B/0.5B pair, ``-md --spec-type
draft-simple``, instead of the server without speculation) while a client sends requests.

The files are committed, so the tests need no server; ``test_attach_tui.py`` also drives the TUI against a
live server when the binary is there.
"""

from __future__ import annotations

import json
import sys
import tempfile
import threading
import urllib.request
from pathlib import Path

HERE = Path(__file__).resolve().parent
DATA = HERE / "data"
WATCH = DATA / "attach-watch.jsonl"
REQUEST = DATA / "attach-request.jsonl"
PROMPT = "the hash map key value table bucket chain probe slot list node array index load factor"


def server_args(target: Path, draft: Path | None) -> list[str]:
    spec = ["-md", str(draft), "--spec-type", "draft-simple", "--spec-draft-n-max", "3"] if draft else []
    return ["-m", str(target), *spec, "--metrics", "-c", "2048", "-np", "1", "--no-warmup",
            "-t", "1", "-tb", "1", "-td", "1"]


def _client(urls: list[str], stop: threading.Event, prompt: str = PROMPT) -> None:
    body = json.dumps({"prompt": prompt, "n_predict": 24, "temperature": 0}).encode()
    while not stop.wait(0.6):
        for url in urls:
            req = urllib.request.Request(url + "/completion", data=body, headers={"Content-Type": "application/json"})
            try:
                with urllib.request.urlopen(req, timeout=30) as r:  # noqa: S310 - our own loopback server
                    r.read()
            except OSError:
                pass


def record(out_dir: Path = DATA) -> None:
    sys.path[:0] = [str(HERE), str(HERE.parent)]  # tests/ helpers and this checkout's spectui
    import tinymodels
    from click.testing import CliRunner
    from servers import LlamaServer, free_port, llama_server_binary

    from spectui.commands.attach import attach_cmd

    binary = llama_server_binary()
    if binary is None:
        raise SystemExit("llama-server not built: run scripts/build-llama-server.sh")
    tmp = Path(tempfile.mkdtemp(prefix="spectui-attach-rec-"))
    target = tinymodels.build_model(tmp / "target.gguf", seed=0, name="tiny-target")
    draft = tinymodels.build_model(tmp / "draft.gguf", seed=0, noise=0.1, name="tiny-draft-noisy")
    spec = LlamaServer(binary, server_args(target, draft), tmp / "spec.log")
    plain = LlamaServer(binary, server_args(target, None), tmp / "plain.log")
    dead = f"http://127.0.0.1:{free_port()}"
    stop = threading.Event()
    client = threading.Thread(target=_client, args=([spec.url, plain.url], stop), daemon=True)
    try:
        client.start()
        r = CliRunner().invoke(attach_cmd, [spec.url, plain.url, dead, "--interval", "0.5", "--count", "8",
                                            "--headless", "--record", str(out_dir / WATCH.name)])
        assert r.exit_code == 0, r.output
        stop.set()
        client.join()
        r = CliRunner().invoke(attach_cmd, [spec.url, "-p", PROMPT, "-n", "48", "--interval", "0.5", "--headless",
                                            "--record", str(out_dir / REQUEST.name)])
        assert r.exit_code == 0, r.output
    finally:
        stop.set()
        spec.stop()
        plain.stop()


QWEN_DIR = Path.home() / ".cache" / "spectui" / "models"
QWEN = (QWEN_DIR / "qwen2.5-coder-1.5b-instruct-q4_k_m.gguf", QWEN_DIR / "qwen2.5-coder-0.5b-instruct-q4_k_m.gguf")
CODE_PROMPT = "# Python: a hash map with separate chaining\nclass HashMap:\n    def __init__(self, capacity=8):\n"


async def _shoot(urls: list[str], out: Path, seconds: float, size: tuple[int, int]) -> None:
    import time

    from spectui.attach.session import AttachSession
    from spectui.tui.attach.app import AttachApp

    app = AttachApp(session=AttachSession(urls, interval=1.0))
    async with app.run_test(size=size) as pilot:
        deadline = time.monotonic() + seconds
        while time.monotonic() < deadline:
            await pilot.pause(0.5)
        # then the first moment every answering engine drafted in the last interval (llama-server's counters
        # move when a request ends), within 30 s more
        deadline += 30
        while time.monotonic() < deadline:
            live = [w for w in app.state.stats.snapshot().interval if w.status != "error"]
            if live and all(w.status == "ok" for w in live):
                break
            await pilot.pause(0.1)
        app.paint()
        await pilot.pause()
        app.save_screenshot(filename=out.name, path=str(out.parent))
        await pilot.press("q")


def screenshot(out: Path, qwen: bool, seconds: float = 25.0) -> None:
    """The README's picture: the attach TUI watching real llama-servers while a client sends requests."""
    import asyncio

    sys.path[:0] = [str(HERE), str(HERE.parent)]
    import tinymodels
    from servers import LlamaServer, free_port, llama_server_binary

    binary = llama_server_binary()
    if binary is None:
        raise SystemExit("llama-server not built: run scripts/build-llama-server.sh")
    tmp = Path(tempfile.mkdtemp(prefix="spectui-attach-shot-"))
    target = tinymodels.build_model(tmp / "target.gguf", seed=0, name="tiny-target")
    draft = tinymodels.build_model(tmp / "draft.gguf", seed=0, noise=0.1, name="tiny-draft-noisy")
    servers = [LlamaServer(binary, server_args(target, draft), tmp / "spec.log")]
    clients = [servers[0].url]
    try:
        if qwen:
            args = ["-m", str(QWEN[0]), "-md", str(QWEN[1]), "--spec-type", "draft-simple", "--spec-draft-n-max", "4",
                    "--metrics", "-c", "2048", "-np", "1", "-t", "2", "-tb", "2", "-td", "2"]
            servers.append(LlamaServer(binary, args, tmp / "qwen.log", ready_s=300))
            clients.append(servers[-1].url)
        else:
            servers.append(LlamaServer(binary, server_args(target, None), tmp / "plain.log"))
            clients.append(servers[-1].url)
        urls = [s.url for s in servers] + [f"http://127.0.0.1:{free_port()}"]
        stop = threading.Event()
        prompts = [PROMPT, CODE_PROMPT if qwen else PROMPT]
        threads = [threading.Thread(target=_client, args=([u], stop, p), daemon=True) for u, p in zip(clients, prompts)]
        for th in threads:
            th.start()
        asyncio.run(_shoot(urls, out, seconds, (112, 34)))
        stop.set()
    finally:
        for s in servers:
            s.stop()


if __name__ == "__main__":
    if "--screenshot" in sys.argv:
        screenshot(HERE.parent / "docs" / "attach-screenshot.svg", qwen="--qwen" in sys.argv,
                   seconds=45.0 if "--qwen" in sys.argv else 25.0)
        raise SystemExit(0)
    DATA.mkdir(exist_ok=True)
    record()
    print(WATCH.read_text().count("\n"), "lines in", WATCH)
    print(REQUEST.read_text().count("\n"), "lines in", REQUEST)
