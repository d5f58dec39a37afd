"""The CPU this process may use: the default thread count, and how much of it other processes take.

``default_threads()`` follows llama.cpp (``common_cpu_get_num_math``): one thread per *physical*
*performance* core, never one per SMT sibling and never an efficiency core, and then narrows that to
what this process may really use: its CPU affinity (``taskset``, cpusets) and a container's CPU quota
(cgroup v2 ``cpu.max`` or v1 ``cpu.cfs_quota_us``). ``os.cpu_count()`` counts every logical CPU of the
host, which on a laptop with SMT is twice the cores and in a container the host's count.

``OthersCpu`` samples ``/proc/stat`` for the CPUs in this process's affinity and subtracts this
process's own CPU time, giving the cores *other* processes kept busy between two samples. The engine
records it per pass (``PassEvent.others_cpu``) so statistics can say "another process took the cores".

No UI imports; Linux paths are read when present, other systems fall back to portable figures.
"""

from __future__ import annotations

import math
import os
import platform
import subprocess
import time
from dataclasses import dataclass

SYS_CPU = "/sys/devices/system/cpu"


def _read(path: str) -> str | None:
    try:
        with open(path, encoding="ascii") as fh:
            return fh.read().strip()
    except OSError:
        return None


def parse_cpu_list(text: str) -> set[int]:
    """'0-3,8,10-11' -> {0, 1, 2, 3, 8, 10, 11} (the kernel's cpulist format)."""
    out: set[int] = set()
    for part in text.strip().split(","):
        part = part.strip()
        if not part:
            continue
        if "-" in part:
            a, b = part.split("-", 1)
            out.update(range(int(a), int(b) + 1))
        else:
            out.add(int(part))
    return out


def affinity() -> set[int]:
    """CPUs this process may run on."""
    try:
        return set(os.sched_getaffinity(0))
    except (AttributeError, OSError):  # macOS, Windows
        return set(range(os.cpu_count() or 1))


def cgroup_cpu_quota(root: str = "/sys/fs/cgroup") -> float | None:
    """CPUs' worth of time the container's cgroup allows (e.g. 2.5), or None when unlimited/unknown."""
    v2 = _read(f"{root}/cpu.max")
    if v2:
        quota, _, period = v2.partition(" ")
        if quota != "max":
            try:
                return int(quota) / int(period or 100000)
            except ValueError:
                return None
        return None
    q = _read(f"{root}/cpu/cpu.cfs_quota_us") or _read(f"{root}/cpu.cfs_quota_us")
    p = _read(f"{root}/cpu/cpu.cfs_period_us") or _read(f"{root}/cpu.cfs_period_us")
    try:
        if q is not None and p is not None and int(q) > 0:
            return int(q) / int(p)
    except ValueError:
        pass
    return None


def performance_cpus(sys_cpu: str = SYS_CPU, devices: str = "/sys/devices") -> set[int] | None:
    """Logical CPUs that are performance cores on a hybrid CPU (Intel P-cores), None when not hybrid."""
    if os.path.isdir(f"{devices}/cpu_atom"):
        p = _read(f"{devices}/cpu_core/cpus")
        if p:
            return parse_cpu_list(p)
    return None


def physical_cores(cpus: set[int], sys_cpu: str = SYS_CPU) -> int:
    """Distinct physical cores among ``cpus`` (SMT siblings count once), from sysfs topology."""
    seen: set[str] = set()
    unknown = 0
    for c in cpus:
        sib = _read(f"{sys_cpu}/cpu{c}/topology/thread_siblings_list") or _read(
            f"{sys_cpu}/cpu{c}/topology/core_cpus_list"
        )
        if sib is None:
            unknown += 1
        else:
            seen.add(sib)
    return len(seen) + unknown


def _macos_perf_cores() -> int | None:
    for key in ("hw.perflevel0.physicalcpu", "hw.physicalcpu"):
        try:
            out = subprocess.run(  # noqa: S603 - a fixed argument vector
                ["sysctl", "-n", key], capture_output=True, text=True, timeout=2, check=False  # noqa: S607 - system tool
            )
            n = int(out.stdout.strip())
            if n > 0:
                return n
        except (OSError, ValueError, subprocess.SubprocessError):
            continue
    return None


@dataclass(frozen=True)
class ThreadChoice:
    threads: int
    why: str  # one line, e.g. "2 physical cores (affinity 0-1)"


def default_threads(sys_cpu: str = SYS_CPU, devices: str = "/sys/devices", cgroup: str = "/sys/fs/cgroup",
                    cpus: set[int] | None = None) -> ThreadChoice:
    """Threads as llama.cpp chooses them, within this process's affinity and CPU quota."""
    if platform.system() == "Darwin":
        n = _macos_perf_cores() or (os.cpu_count() or 1)
        return ThreadChoice(max(1, n), f"{n} performance cores")
    allowed = set(cpus) if cpus is not None else affinity()
    perf = performance_cpus(sys_cpu, devices)
    usable = allowed & perf if perf else allowed
    if not usable:  # affinity entirely on efficiency cores: use them rather than nothing
        usable = allowed
    n = physical_cores(usable, sys_cpu)
    why = f"{n} physical {'performance ' if perf else ''}core{'s' if n != 1 else ''}"
    if len(allowed) < (os.cpu_count() or len(allowed)):
        why += f" in this process's CPU affinity ({len(allowed)} of {os.cpu_count()} CPUs)"
    quota = cgroup_cpu_quota(cgroup)
    if quota is not None and math.ceil(quota) < n:
        n = max(1, math.ceil(quota))
        why = f"{n} (container CPU quota {quota:g} CPUs)"
    return ThreadChoice(max(1, n), why)


def spare_core(threads: int, on_cpu: bool = True, cgroup: str = "/sys/fs/cgroup",
               cpus: set[int] | None = None) -> bool:
    """Whether this process may use a core that the decode leaves free: more CPUs in its affinity (and CPU
    quota) than the decode's ``threads``, or no decode on the CPU at all (``on_cpu`` False: every layer of
    both models offloaded to a GPU). Work moved off the engine's passes (finishing events, writing the
    trace) runs there without taking a core from llama.cpp's threads, whose OpenMP barriers collapse when a
    core is taken from them."""
    if not on_cpu:
        return True
    n = len(set(cpus) if cpus is not None else affinity())
    quota = cgroup_cpu_quota(cgroup)
    if quota is not None:
        n = min(n, max(1, math.floor(quota)))
    return n > max(1, int(threads))


class OthersCpu:
    """Cores other processes kept busy on this process's CPUs since the previous ``sample()``.

    Busy time per CPU comes from /proc/stat (user+nice+system+irq+softirq+steal, in clock ticks), this
    process's own from os.times(). Returns -1.0 where /proc/stat does not exist.
    """

    def __init__(self, cpus: set[int] | None = None, stat_path: str = "/proc/stat") -> None:
        self.cpus = cpus if cpus is not None else affinity()
        self.path = stat_path
        self.tick = os.sysconf("SC_CLK_TCK") if hasattr(os, "sysconf") else 100
        self.available = os.path.exists(stat_path)
        self._fd: int | None = None
        self._last = self._read() if self.available else None

    def close(self) -> None:
        fd, self._fd = self._fd, None
        if fd is not None:
            try:
                os.close(fd)
            except OSError:
                pass

    def __del__(self) -> None:
        self.close()

    def _read(self) -> tuple[float, float, float] | None:
        # One pread on a descriptor kept open (the kernel regenerates the file at offset 0) instead of
        # open + read + close per pass: fewer system calls on the loop's critical path.
        try:
            if self._fd is None:
                self._fd = os.open(self.path, os.O_RDONLY | getattr(os, "O_CLOEXEC", 0))
            data = os.pread(self._fd, 1 << 16, 0)
        except OSError:
            self.close()
            return None
        busy = 0
        seen = False
        for line in data.split(b"\n"):
            if not line.startswith(b"cpu"):
                if seen:
                    break  # the CPU lines come first; the long "intr" line and the rest are not parsed
                continue
            seen = True
            if line[3:4] == b" ":
                continue
            name, *vals = line.split()
            try:
                cpu = int(name[3:])
            except ValueError:
                continue
            if cpu in self.cpus and len(vals) >= 8:
                v = [int(x) for x in vals[:8]]  # user nice system idle iowait irq softirq steal
                busy += v[0] + v[1] + v[2] + v[5] + v[6] + v[7]
        t = os.times()
        return busy / self.tick, t.user + t.system, time.monotonic()

    def sample(self) -> float:
        if not self.available or self._last is None:
            return -1.0
        now = self._read()
        if now is None:
            return -1.0
        (b0, s0, w0), (b1, s1, w1) = self._last, now
        self._last = now
        wall = w1 - w0
        if wall <= 0:
            return -1.0
        others = ((b1 - b0) - (s1 - s0)) / wall
        return round(max(0.0, min(float(len(self.cpus)), others)), 2)
