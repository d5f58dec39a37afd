"""A CPU-only llama.cpp build on a machine with a GPU it could use says so in one line of the run's summary: the
GPU is seen cheaply (sysfs PCI vendor and class under a made-up SPECTUI_SYSFS_ROOT here, nvidia-smi on PATH, Apple
silicon), recorded in the start event (``RunStarted.gpu_note``), and printed by the headless summary, live and
replayed alike."""

from __future__ import annotations

import dataclasses
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from spectui.analysis.stats import RunStats
from spectui.contract.event_json import from_dict, to_dict
from spectui.contract.events import RunStarted
from spectui.engine.llama.devices import cpu_build_note, present_gpu, supports_gpu_offload
from spectui.recording.synthetic import sample_events
from spectui.text.run import summary_text

ROOT = Path(__file__).resolve().parents[2]
NOTE = "llama.cpp was built for the CPU, but an NVIDIA GPU is present: rebuild with CUDA"
LINUX = ("Linux", "x86_64")


def fake_sysfs(root: Path, *devices: tuple[str, str]) -> Path:
    """A sysfs tree whose PCI devices have these (vendor, class) attributes, as the kernel writes them."""
    base = root / "bus" / "pci" / "devices"
    base.mkdir(parents=True)
    for i, (vendor, cls) in enumerate(devices):
        d = base / f"0000:{i:02x}:00.0"
        d.mkdir()
        (d / "vendor").write_text(vendor + "\n")
        (d / "class").write_text(cls + "\n")
    return root


def test_the_gpu_is_seen_from_sysfs_nvidia_smi_or_apple_silicon(tmp_path):
    empty = tmp_path / "bin"
    empty.mkdir()
    plain = fake_sysfs(tmp_path / "plain", ("0x8086", "0x060000"), ("0x1af4", "0x020000"))  # a bridge, a NIC
    assert present_gpu(str(plain), str(empty), LINUX) == ""
    nvidia = fake_sysfs(tmp_path / "nv", ("0x8086", "0x060000"), ("0x10de", "0x030200"))  # a 3D controller
    assert present_gpu(str(nvidia), str(empty), LINUX) == "NVIDIA"
    amd = fake_sysfs(tmp_path / "amd", ("0x1002", "0x030000"))
    assert present_gpu(str(amd), str(empty), LINUX) == "AMD"
    audio = fake_sysfs(tmp_path / "audio", ("0x10de", "0x040300"))  # an NVIDIA card's HDMI audio: not a GPU
    assert present_gpu(str(audio), str(empty), LINUX) == ""
    intel = fake_sysfs(tmp_path / "intel", ("0x8086", "0x030000"))  # no rebuild to advise for an Intel GPU
    assert present_gpu(str(intel), str(empty), LINUX) == ""
    smi = empty / "nvidia-smi"
    smi.write_text("#!/bin/sh\n")
    smi.chmod(0o755)
    assert present_gpu(str(plain), str(empty), LINUX) == "NVIDIA"
    assert present_gpu(str(tmp_path / "no-sysfs"), str(tmp_path / "nowhere"), ("Darwin", "arm64")) == "Apple"
    assert present_gpu(str(tmp_path / "no-sysfs"), str(tmp_path / "nowhere"), ("Darwin", "x86_64")) == ""


def test_hostile_sysfs_attributes_are_read_in_a_few_bytes(tmp_path):
    root = fake_sysfs(tmp_path / "sys", ("0x10de" + "0" * 5_000_000, "0x030000"))
    assert present_gpu(str(root), str(tmp_path), LINUX) == ""  # 32 bytes read: not a vendor id, not a GPU


@pytest.mark.skipif(supports_gpu_offload(), reason="this llama.cpp build offloads: it has no note to give")
def test_the_note_on_a_cpu_build(tmp_path, monkeypatch):
    assert cpu_build_note("NVIDIA").startswith(NOTE)
    assert "AMD GPU is present: rebuild with HIP or Vulkan" in cpu_build_note("AMD")
    assert "Apple GPU is present: rebuild with Metal" in cpu_build_note("Apple")
    assert cpu_build_note("") == ""
    monkeypatch.setenv("SPECTUI_SYSFS_ROOT", str(fake_sysfs(tmp_path / "sys", ("0x10de", "0x030000"))))
    assert cpu_build_note().startswith(NOTE)  # the environment's made-up sysfs, as a live run reads it


def test_the_summary_says_it_in_one_line_and_escapes_a_trace_s_text():
    start = dataclasses.replace(sample_events()[0], gpu_note=NOTE + " (install the CUDA toolkit)")
    stats = RunStats()
    for ev in [start, *sample_events()[1:]]:
        stats.update(ev)
    lines = summary_text(stats).splitlines()
    assert [ln for ln in lines if "GPU is present" in ln] == [NOTE + " (install the CUDA toolkit)"]
    quiet = RunStats()
    for ev in sample_events():
        quiet.update(ev)
    assert "GPU is present" not in summary_text(quiet)
    hostile = RunStats()
    for ev in [dataclasses.replace(start, gpu_note="x\x1b[2J\nforged line"), *sample_events()[1:]]:
        hostile.update(ev)
    text = summary_text(hostile)
    assert "\x1b" not in text and "\nforged line" not in text and "x\\x1b[2J\\nforged line" in text


def test_the_note_travels_in_the_start_event_and_old_traces_read():
    start = RunStarted(threads=2, gpu_note=NOTE)
    assert from_dict(json.loads(json.dumps(to_dict(start)))) == start
    old = to_dict(RunStarted(threads=2))
    del old["gpu_note"]  # a trace from before the field
    assert from_dict(old).gpu_note == ""


@pytest.mark.slow
@pytest.mark.skipif(supports_gpu_offload(), reason="this llama.cpp build offloads: it has no note to give")
def test_a_live_headless_run_on_a_cpu_build_names_the_gpu(tiny_target, tiny_draft_same, tmp_path):
    def run(sysfs: Path, *extra: str) -> subprocess.CompletedProcess:
        env = dict(os.environ, PYTHONPATH=str(ROOT), NO_COLOR="1", SPECTUI_SYSFS_ROOT=str(sysfs),
                   PATH=os.path.dirname(sys.executable))  # no nvidia-smi: the made-up sysfs alone says what is here
        return subprocess.run([sys.executable, "-m", "spectui", "--target", str(tiny_target), "--draft",
                               str(tiny_draft_same), "--headless", "-n", "4", "-p", "the", *extra],
                              capture_output=True, text=True, timeout=120, env=env)

    gpu = run(fake_sysfs(tmp_path / "gpu", ("0x10de", "0x030000")))
    assert gpu.returncode == 0, gpu.stderr
    assert [ln for ln in gpu.stdout.splitlines() if "GPU is present" in ln] == [
        NOTE + " (install the CUDA toolkit, then bash scripts/install.sh --live; see docs/gpu.md)"]
    none = run(fake_sysfs(tmp_path / "none", ("0x1af4", "0x020000")), "--json")
    assert none.returncode == 0, none.stderr
    assert json.loads(none.stdout)["start"]["gpu_note"] == ""
    as_json = run(fake_sysfs(tmp_path / "gpu2", ("0x10de", "0x030000")), "--json")
    assert json.loads(as_json.stdout)["start"]["gpu_note"].startswith(NOTE)
