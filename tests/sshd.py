"""A private OpenSSH server on 127.0.0.1 for the SSH tests (tests/tui/test_ssh.py) and the bandwidth
benchmark (benchmarks/ssh_bandwidth.py): host and client keys, its config and its pid file in a temporary
folder, a free port, started with ``sshd -D`` and stopped by its PID. It logs in as the user running the tests
with the client key only (no password, no PAM), and runs commands as that user's shell would.

``Sshd.ssh_argv(command, tty=True)`` is the client's command line: ``ssh -tt`` (a pty on the server, as a
user's ``ssh -t host spectui demo``) or without a tty (``ssh host spectui demo``).
"""

from __future__ import annotations

import getpass
import os
import shlex
import shutil
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
SSHD = shutil.which("sshd") or ("/usr/sbin/sshd" if os.path.exists("/usr/sbin/sshd") else None)
SSH = shutil.which("ssh")


def available() -> bool:
    return bool(SSHD and SSH and shutil.which("ssh-keygen"))


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Sshd:
    def __init__(self) -> None:
        self.dir = Path(tempfile.mkdtemp(prefix="spectui-sshd-"))
        os.chmod(self.dir, 0o700)
        self.port = _free_port()
        self.user = getpass.getuser()
        self.proc: subprocess.Popen | None = None

    def _keygen(self, path: Path) -> None:
        subprocess.run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f", str(path)], check=True,
                       capture_output=True, timeout=30)

    def start(self) -> "Sshd":
        self._keygen(self.dir / "host_key")
        self._keygen(self.dir / "client_key")
        shutil.copy(self.dir / "client_key.pub", self.dir / "authorized_keys")
        os.chmod(self.dir / "authorized_keys", 0o600)
        Path("/run/sshd").mkdir(mode=0o755, exist_ok=True) if os.geteuid() == 0 else None  # privilege separation
        config = self.dir / "sshd_config"
        config.write_text("\n".join([
            f"Port {self.port}", "ListenAddress 127.0.0.1", f"HostKey {self.dir / 'host_key'}",
            f"AuthorizedKeysFile {self.dir / 'authorized_keys'}", f"PidFile {self.dir / 'sshd.pid'}",
            "PasswordAuthentication no", "KbdInteractiveAuthentication no", "UsePAM no", "StrictModes no",
            "PermitRootLogin prohibit-password", "PrintMotd no", "PrintLastLog no", "Subsystem sftp internal-sftp",
            "ClientAliveInterval 0", "",
        ]))
        self.proc = subprocess.Popen([SSHD, "-D", "-e", "-f", str(config)], stdout=subprocess.DEVNULL,
                                     stderr=open(self.dir / "sshd.log", "wb"))
        deadline = time.monotonic() + 20
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError("sshd did not start: " + (self.dir / "sshd.log").read_text()[-2000:])
            try:
                with socket.create_connection(("127.0.0.1", self.port), timeout=1):
                    return self
            except OSError:
                time.sleep(0.1)
        raise RuntimeError("sshd never listened")

    def remote(self, args: str, env: dict | None = None) -> str:
        """The remote shell command: ``python -m spectui ARGS`` from this checkout, ``exec``'d (the app is
        the session's process, as a login shell's last command would be)."""
        env = {"PYTHONPATH": str(REPO), **(env or {})}
        sets = " ".join(f"{k}={shlex.quote(v)}" for k, v in env.items())
        return f"cd {shlex.quote(str(REPO))} && exec env {sets} {shlex.quote(sys.executable)} -m spectui {args}"

    def ssh_argv(self, command: str, tty: bool = True) -> list[str]:
        """The client: with ``tty`` a pty on the server (``-tt``; its TERM and size are the client's own
        terminal's), without one (``-T``)."""
        argv = [SSH, "-F", "/dev/null", "-i", str(self.dir / "client_key"), "-p", str(self.port),
                "-o", "StrictHostKeyChecking=no", "-o", "UserKnownHostsFile=/dev/null", "-o", "LogLevel=ERROR",
                "-o", "BatchMode=yes"]
        argv += ["-tt"] if tty else ["-T"]
        return [*argv, f"{self.user}@127.0.0.1", command]

    def stop(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(10)
        shutil.rmtree(self.dir, ignore_errors=True)
