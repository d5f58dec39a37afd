"""Threads as llama.cpp chooses them (physical performance cores within affinity and CPU quota), other
processes' CPU use from /proc/stat, and the contention statistics built on it. The CPU topology tests
lay out a sysfs tree of their own, so they describe machines this one is not (SMT, hybrid, containers)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from synthetic_events import make_plain_pass

from spectui.analysis.stats import CONTENDED_CORES, RunStats
from spectui.contract.events import PassEvent, RunStarted, Settings, SettingsChanged
from spectui.engine import cpu


def fake_sysfs(root: Path, siblings: dict[int, str], p_cores: str | None = None) -> tuple[str, str]:
    sys_cpu = root / "sys" / "devices" / "system" / "cpu"
    for c, sib in siblings.items():
        d = sys_cpu / f"cpu{c}" / "topology"
        d.mkdir(parents=True)
        (d / "thread_siblings_list").write_text(sib + "\n")
    devices = root / "sys" / "devices"
    if p_cores is not None:
        (devices / "cpu_atom").mkdir(parents=True)
        (devices / "cpu_core").mkdir(parents=True)
        (devices / "cpu_core" / "cpus").write_text(p_cores + "\n")
    return str(sys_cpu), str(devices)


def test_parse_cpu_list():
    assert cpu.parse_cpu_list("0-3,8,10-11\n") == {0, 1, 2, 3, 8, 10, 11}
    assert cpu.parse_cpu_list("5") == {5}


def test_smt_laptop_counts_physical_cores(tmp_path):
    """4 cores x 2 SMT threads = 8 logical CPUs -> 4 threads (os.cpu_count() would say 8)."""
    sys_cpu, devices = fake_sysfs(tmp_path, {c: f"{c % 4},{c % 4 + 4}" for c in range(8)})
    ch = cpu.default_threads(sys_cpu, devices, cgroup=str(tmp_path / "nocg"), cpus=set(range(8)))
    assert ch.threads == 4 and "physical" in ch.why


def test_hybrid_cpu_uses_performance_cores_only(tmp_path):
    """2 P-cores with SMT (cpus 0-3) + 8 E-cores (4-11) -> 2 threads, as llama.cpp's cpu_get_num_math."""
    sib = {0: "0-1", 1: "0-1", 2: "2-3", 3: "2-3"} | {c: str(c) for c in range(4, 12)}
    sys_cpu, devices = fake_sysfs(tmp_path, sib, p_cores="0-3")
    ch = cpu.default_threads(sys_cpu, devices, cgroup=str(tmp_path / "nocg"), cpus=set(range(12)))
    assert ch.threads == 2 and "performance" in ch.why


def test_affinity_narrows_the_choice(tmp_path):
    sys_cpu, devices = fake_sysfs(tmp_path, {c: str(c) for c in range(16)})
    ch = cpu.default_threads(sys_cpu, devices, cgroup=str(tmp_path / "nocg"), cpus={2, 3, 4})
    assert ch.threads == 3


@pytest.mark.parametrize("files, quota", [
    ({"cpu.max": "150000 100000"}, 1.5),
    ({"cpu.max": "max 100000"}, None),
    ({"cpu/cpu.cfs_quota_us": "200000", "cpu/cpu.cfs_period_us": "100000"}, 2.0),
    ({"cpu/cpu.cfs_quota_us": "-1", "cpu/cpu.cfs_period_us": "100000"}, None),
])
def test_cgroup_quota(tmp_path, files, quota):
    for name, text in files.items():
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_text(text + "\n")
    assert cpu.cgroup_cpu_quota(str(tmp_path)) == quota


def test_container_quota_caps_threads(tmp_path):
    """A container on a 16-core host with a 1.5-CPU quota: 2 threads, not 16."""
    sys_cpu, devices = fake_sysfs(tmp_path, {c: str(c) for c in range(16)})
    cg = tmp_path / "cg"
    cg.mkdir()
    (cg / "cpu.max").write_text("150000 100000\n")
    ch = cpu.default_threads(sys_cpu, devices, cgroup=str(cg), cpus=set(range(16)))
    assert ch.threads == 2 and "quota" in ch.why


def test_this_machine():
    ch = cpu.default_threads()
    assert 1 <= ch.threads <= len(os.sched_getaffinity(0))


def _stat(busy: list[int]) -> str:
    lines = ["cpu  0 0 0 0 0 0 0 0 0 0"]
    for i, b in enumerate(busy):
        lines.append(f"cpu{i} {b} 0 0 1000 0 0 0 0 0 0")
    return "\n".join(lines) + "\nintr 0\n"


def test_others_cpu_from_proc_stat(tmp_path, monkeypatch):
    """Busy ticks on our CPUs minus our own CPU time, per second of wall time."""
    stat = tmp_path / "stat"
    stat.write_text(_stat([0, 0, 0]))
    clock = iter([100.0, 101.0])
    times = iter([os.times_result((0.0, 0.0, 0.0, 0.0, 0.0)), os.times_result((0.5, 0.0, 0.0, 0.0, 0.0))])
    monkeypatch.setattr(cpu.time, "monotonic", lambda: next(clock))
    monkeypatch.setattr(cpu.os, "times", lambda: next(times))
    s = cpu.OthersCpu(cpus={0, 1}, stat_path=str(stat))
    s.tick = 100
    # one second later: cpu0 and cpu1 busy 100 + 50 ticks (1.5 s), cpu2 (not ours) busy too; we used 0.5 s
    stat.write_text(_stat([100, 50, 100]))
    assert s.sample() == pytest.approx(1.0)


def test_others_cpu_unavailable(tmp_path):
    assert cpu.OthersCpu(stat_path=str(tmp_path / "none")).sample() == -1.0


# ------------------------------------------------------------------ contention in the statistics


def _pass(i: int, ms: float, others: float) -> PassEvent:
    return make_plain_pass(i, ms, others_cpu=others)


def feed(stats: RunStats, passes):
    for p in passes:
        stats.update(p)
    return stats.snapshot()


def test_quiet_run_is_not_contended():
    st = RunStats()
    st.update(RunStarted(threads=2))
    snap = feed(st, [_pass(i, 45.0, 0.05) for i in range(1, 60)])
    assert snap.contention == "" and snap.contended_passes == 0 and 0.0 <= snap.others_cpu < CONTENDED_CORES


def test_collapse_under_load_is_named_and_counted():
    """22 t/s, then another process takes 1.6 cores and the rate falls to 3 t/s (as seen here)."""
    st = RunStats()
    st.update(RunStarted(threads=2))
    feed(st, [_pass(i, 45.0, 0.05) for i in range(1, 40)])
    snap = feed(st, [_pass(i, 330.0, 1.6) for i in range(40, 70)])
    assert "1.6 of this run's 2 cores" in snap.contention and "before" in snap.contention
    assert snap.contended_passes > 10 and snap.contention_peak_others == pytest.approx(1.6, abs=0.05)
    assert 2.9 < snap.contention_low_tps < 3.1
    snap = feed(st, [_pass(i, 45.0, 0.0) for i in range(70, 100)])  # the other process ends
    assert snap.contention == "" and snap.contended_passes > 10


def test_busy_neighbour_without_slowdown_is_not_contention():
    st = RunStats()
    st.update(RunStarted(threads=2))
    feed(st, [_pass(i, 45.0, 0.0) for i in range(1, 40)])
    snap = feed(st, [_pass(i, 47.0, 0.9) for i in range(40, 70)])
    assert snap.contention == ""


def test_settings_change_resets_the_reference():
    """A slower k is not contention: the reference rate restarts at a settings change."""
    st = RunStats()
    st.update(RunStarted(threads=2))
    feed(st, [_pass(i, 30.0, 0.0) for i in range(1, 40)])
    st.update(SettingsChanged(before_pass=40, old=Settings(draft_max=0), new=Settings(draft_max=8)))
    snap = feed(st, [_pass(i, 120.0, 0.0) for i in range(40, 70)])
    assert snap.contention == ""


def test_old_traces_have_no_measure():
    st = RunStats()
    snap = feed(st, [_pass(i, 45.0, -1.0) for i in range(1, 30)])
    assert snap.others_cpu == -1.0 and snap.contention == ""
