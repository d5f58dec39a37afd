"""The GPU backend scripts/llama-cmake-args.sh chooses, run for real under made-up machines: stand-in tools
(small shell scripts named nvidia-smi, nvcc, hipcc, rocminfo, glslc, ldconfig, vulkaninfo, uname) on a PATH
that holds nothing else but the few real tools the script needs, and a made-up sysfs tree
(SPECTUI_SYSFS_ROOT). Nothing is built: build-llama-cpp-python.sh is run with --dry-run only."""

from __future__ import annotations

import hashlib
import platform
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent
ARGS = REPO / "scripts" / "llama-cmake-args.sh"
BUILD = REPO / "scripts" / "build-llama-cpp-python.sh"
BASH = shutil.which("bash") or "/bin/bash"
REAL = ("bash", "grep", "head", "tr", "sort", "paste", "cat", "uname", "sha256sum", "cut", "dirname")

TOOLS = {
    "nvidia-smi": 'case "$*" in -L) echo "GPU 0: NVIDIA H100 80GB HBM3 (UUID: GPU-0)";; '
                  '*compute_cap*) printf "9.0\\n8.6\\n9.0\\n";; esac',
    "nvcc": "echo 'Cuda compilation tools, release 12.4'",
    "hipcc": "echo hipcc",
    "rocminfo": "echo '  Name:                    gfx90a'",
    "glslc": "echo glslc",
    "ldconfig": "echo '\tlibvulkan.so.1 (libc6,x86-64) => /usr/lib/x86_64-linux-gnu/libvulkan.so.1'",
    "uname": 'case "$1" in -s) echo Darwin;; -m) echo arm64;; *) echo Darwin;; esac',
}
LAVAPIPE = "echo 'deviceType = PHYSICAL_DEVICE_TYPE_CPU'; echo 'deviceName = llvmpipe (LLVM 15.0.6, 256 bits)'"
NVIDIA, AMD, INTEL, VIRTIO = "0x10de", "0x1002", "0x8086", "0x1af4"


def cpu_flags() -> str:
    """The CPU flags as the script has always printed them (its rules, written out again from its header)."""
    if platform.machine() not in ("x86_64", "amd64"):
        return ""
    line = next((x for x in Path("/proc/cpuinfo").read_text().splitlines() if x.startswith("flags")), "")
    have = set(line.split(":", 1)[-1].split())
    args = ["-DGGML_NATIVE=OFF"]
    for flag, opt in (("avx", "AVX"), ("avx2", "AVX2"), ("fma", "FMA"), ("f16c", "F16C"), ("avx512f", "AVX512"),
                      ("avx512_vnni", "AVX512_VNNI"), ("avx512_bf16", "AVX512_BF16"),
                      ("avx512_vbmi", "AVX512_VBMI"), ("avx_vnni", "AVX_VNNI")):
        if flag in have:
            args.append(f"-DGGML_{opt}=ON")
    return " ".join(args + ["-DGGML_AMX_TILE=OFF", "-DGGML_AMX_INT8=OFF", "-DGGML_AMX_BF16=OFF"])


class Machine:
    """A made-up machine: its tools on PATH and its PCI devices in a sysfs tree."""

    def __init__(self, root: Path):
        self.bin, self.sys, self.real = root / "bin", root / "sys", root / "real"
        for d in (self.bin, self.sys / "bus" / "pci" / "devices", self.real):
            d.mkdir(parents=True)
        for name in REAL:
            path = shutil.which(name)
            assert path, f"{name} not found on this machine"
            (self.real / name).symlink_to(path)
        self.env = {"PATH": f"{self.bin}:{self.real}", "SPECTUI_SYSFS_ROOT": str(self.sys), "HOME": str(root)}

    def tool(self, name: str, body: str | None = None) -> Machine:
        p = self.bin / name
        p.write_text(f"#!{BASH}\n{body if body is not None else TOOLS[name]}\n")
        p.chmod(0o755)
        return self

    def pci(self, vendor: str, cls: str = "0x030000") -> Machine:
        d = self.sys / "bus" / "pci" / "devices" / f"0000:{len(list(self.sys.rglob('vendor'))) + 1:02x}:00.0"
        d.mkdir()
        (d / "vendor").write_text(vendor + "\n")
        (d / "class").write_text(cls + "\n")
        return self

    def run(self, *args: str, script: Path = ARGS, **env: str) -> subprocess.CompletedProcess:
        return subprocess.run([BASH, str(script), *args], env=self.env | env, capture_output=True, text=True,
                              timeout=60)

    def choose(self, **env: str) -> tuple[str, str, str]:
        """(flags, backend, stderr of the flags' run); both runs must succeed."""
        a, b = self.run(**env), self.run("--backend", **env)
        assert a.returncode == 0 and b.returncode == 0, a.stderr + b.stderr
        assert b.stderr == ""  # --backend never says anything on stderr
        return a.stdout.rstrip("\n"), b.stdout.strip(), a.stderr


@pytest.fixture
def machine(tmp_path) -> Machine:
    return Machine(tmp_path)


def with_flag(flag: str) -> str:
    return f"{cpu_flags()} {flag}".strip()


def test_no_gpu_tools_gets_exactly_the_cpu_flags(machine):
    machine.pci(INTEL, "0x060000").pci(VIRTIO, "0x010000")  # a host bridge and a disk: no display device
    assert machine.choose() == (cpu_flags(), "cpu", "")
    assert machine.tool("nvcc").choose() == (cpu_flags(), "cpu", "")  # a toolkit without a GPU (this machine)
    assert machine.tool("hipcc").choose() == (cpu_flags(), "cpu", "")


def test_an_nvidia_gpu_with_nvcc_builds_cuda_for_its_compute_capabilities(machine):
    machine.tool("nvidia-smi").tool("nvcc")
    assert machine.choose() == (with_flag("-DGGML_CUDA=ON -DCMAKE_CUDA_ARCHITECTURES=86;90"), "cuda", "")


def test_cuda_home_stands_for_nvcc_on_path(machine, tmp_path):
    machine.tool("nvidia-smi", TOOLS["nvidia-smi"].replace("9.0", "n/a").replace("8.6", "[N/A]"))
    home = tmp_path / "cuda"
    (home / "bin").mkdir(parents=True)
    (home / "bin" / "nvcc").write_text(f"#!{BASH}\n")
    (home / "bin" / "nvcc").chmod(0o755)
    assert machine.choose(CUDA_HOME=str(home)) == (with_flag("-DGGML_CUDA=ON"), "cuda", "")  # no capability said
    assert machine.choose(CUDA_HOME=str(tmp_path / "nowhere"))[1] == "cpu"


def test_a_gpu_without_its_toolkit_gets_the_cpu_build_and_one_line(machine, tmp_path):
    flags, backend, err = machine.tool("nvidia-smi").choose()
    assert (flags, backend) == (cpu_flags(), "cpu")
    assert err.count("\n") == 1 and "NVIDIA GPU is present" in err and "CUDA toolkit" in err and "nvcc" in err
    bare = Machine(tmp_path / "pci-nvidia").pci(NVIDIA, "0x030200")  # a 3D controller, no tool at all
    flags, backend, err = bare.choose()
    assert (flags, backend) == (cpu_flags(), "cpu") and err.count("\n") == 1 and "CUDA toolkit" in err
    amd = Machine(tmp_path / "pci-amd").pci(AMD)
    flags, backend, err = amd.choose()
    assert (flags, backend) == (cpu_flags(), "cpu")
    assert err.count("\n") == 1 and "AMD GPU is present" in err and "ROCm" in err and "hipcc" in err


def test_hip_with_an_amd_gpu(machine, tmp_path):
    assert machine.tool("hipcc").tool("rocminfo").choose() == (with_flag("-DGGML_HIP=ON"), "hip", "")
    pci = Machine(tmp_path / "pci").pci(AMD).tool("hipcc")
    assert pci.choose() == (with_flag("-DGGML_HIP=ON"), "hip", "")


def test_apple_silicon_gets_metal(machine):
    assert machine.tool("uname").choose() == ("-DGGML_METAL=ON", "metal", "")


def test_vulkan_needs_the_sdk_and_a_real_gpu(machine, tmp_path):
    machine.tool("glslc").tool("ldconfig")
    assert machine.choose() == (cpu_flags(), "cpu", "")  # the SDK, no GPU
    assert machine.tool("vulkaninfo", LAVAPIPE).choose() == (cpu_flags(), "cpu", "")  # Mesa's software device
    machine.tool("vulkaninfo", "echo 'deviceType = PHYSICAL_DEVICE_TYPE_INTEGRATED_GPU'")
    assert machine.choose() == (with_flag("-DGGML_VULKAN=ON"), "vulkan", "")
    intel = Machine(tmp_path / "intel").pci(INTEL).tool("glslc")
    assert intel.choose() == (cpu_flags(), "cpu", "")  # glslc without the loader
    assert intel.tool("ldconfig").choose() == (with_flag("-DGGML_VULKAN=ON"), "vulkan", "")
    nvidia = Machine(tmp_path / "nvidia").pci(NVIDIA).tool("glslc").tool("ldconfig")
    assert nvidia.choose() == (with_flag("-DGGML_VULKAN=ON"), "vulkan", "")  # no nvcc: Vulkan, and no line
    pkgconf = Machine(tmp_path / "pkgconf").pci(AMD).tool("glslc").tool("pkg-config", '[ "$2" = vulkan ]')
    assert pkgconf.choose() == (with_flag("-DGGML_VULKAN=ON"), "vulkan", "")


def test_precedence_cuda_hip_metal_vulkan(machine):
    machine.pci(NVIDIA).pci(AMD).pci(INTEL)
    for name in ("nvidia-smi", "nvcc", "hipcc", "rocminfo", "glslc", "ldconfig", "uname"):
        machine.tool(name)
    assert machine.choose()[1] == "cuda"
    for gone, then in (("nvcc", "hip"), ("hipcc", "metal"), ("uname", "vulkan")):
        (machine.bin / gone).unlink()
        assert machine.choose()[1] == then
    (machine.bin / "glslc").unlink()
    flags, backend, err = machine.choose()  # GPUs, no toolkit: the CPU and one line
    assert (flags, backend) == (cpu_flags(), "cpu") and err.count("\n") == 1


def test_the_variables_win(machine):
    machine.tool("nvidia-smi").tool("nvcc")
    assert machine.choose(SPECTUI_LLAMA_CMAKE_ARGS="-DGGML_VULKAN=on -DX=1") == ("-DGGML_VULKAN=on -DX=1", "vulkan", "")
    assert machine.choose(SPECTUI_LLAMA_CMAKE_ARGS="-DGGML_NATIVE=OFF") == ("-DGGML_NATIVE=OFF", "cpu", "")
    assert machine.choose(SPECTUI_LLAMA_BACKEND="cpu") == (cpu_flags(), "cpu", "")
    assert machine.choose(SPECTUI_LLAMA_BACKEND="vulkan") == (with_flag("-DGGML_VULKAN=ON"), "vulkan", "")
    bad = machine.run(SPECTUI_LLAMA_BACKEND="opencl\x1b[2J")
    assert bad.returncode == 2 and bad.stdout == "" and bad.stderr.count("\n") == 1
    assert "SPECTUI_LLAMA_BACKEND must be" in bad.stderr
    assert machine.run("--frobnicate").returncode == 2


def _dry_run(m: Machine, **env: str) -> dict[str, str]:
    r = m.run("--dry-run", sys.executable, script=BUILD, **env)
    assert r.returncode == 0, r.stderr
    return dict(line.split(" ", 1) for line in r.stdout.splitlines())


def test_the_wheel_cache_key_includes_the_backend(machine, tmp_path):
    tag = sys.implementation.cache_tag
    cpu = _dry_run(machine, SPECTUI_WHEEL_CACHE=str(tmp_path / "w"))
    assert cpu["backend"] == "cpu" and cpu["CMAKE_ARGS"] == cpu_flags()
    old_key = hashlib.sha256(f"0.3.36 {cpu_flags()} {tag}".encode()).hexdigest()[:12]
    assert cpu["wheels"] == str(tmp_path / "w" / old_key)  # the CPU wheel's key is the one it always had
    machine.tool("nvidia-smi").tool("nvcc")
    cuda = _dry_run(machine, SPECTUI_WHEEL_CACHE=str(tmp_path / "w"))
    assert cuda["backend"] == "cuda" and "-DGGML_CUDA=ON" in cuda["CMAKE_ARGS"]
    key = hashlib.sha256(f"cuda 0.3.36 {cuda['CMAKE_ARGS']} {tag}".encode()).hexdigest()[:12]
    assert cuda["wheels"] == str(tmp_path / "w" / key)
    forced = _dry_run(machine, SPECTUI_WHEEL_CACHE=str(tmp_path / "w"), SPECTUI_LLAMA_BACKEND="cpu")
    assert forced == cpu
    assert not (tmp_path / "w").exists()  # a dry run builds and writes nothing
