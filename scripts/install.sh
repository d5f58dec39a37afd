#!/usr/bin/env bash
# Fresh-machine install of spectui into ./.venv:
#   1. a virtual environment (.venv),
#   2. with --live (or --test): llama-cpp-python compiled for the GPU found with its toolkit (CUDA, HIP, Metal,
#      Vulkan: scripts/llama-cmake-args.sh) and this CPU without -march=native
#      (scripts/build-llama-cpp-python.sh; ~6 minutes the first time, cached per flag set afterwards),
#   3. spectui itself (a plain, non-editable install, so packaged themes and the demo trace are tested).
# Without --live nothing is compiled: the demo, replay, cast and attach work without llama-cpp-python
# (a live run then says in one line how to add it).
# usage: bash scripts/install.sh [--live] [--test]
#   --live  llama-cpp-python too (the spectui[live] extra): live runs, sweep, probe
#   --test  the test dependencies, tmux (for the tmux test), chromium (for the browser test) and OpenSSH (for the
#           SSH test); implies --live
set -euo pipefail
cd "$(dirname "$0")/.."
py=${PYTHON:-python3}
live=0
extras=()
for arg in "$@"; do
  case $arg in
    --live) live=1 ;;
    --test) live=1; extras+=(test) ;;
    *) echo "install.sh: unknown option $arg (use --live, --test)" >&2; exit 2 ;;
  esac
done
if [[ ${#extras[@]} -gt 0 ]] && ! command -v tmux >/dev/null 2>&1 && command -v apt-get >/dev/null 2>&1 && [[ $(id -u) == 0 ]]; then
  (apt-get install -y -qq tmux >/dev/null 2>&1 || { apt-get update -qq >/dev/null 2>&1 && apt-get install -y -qq tmux >/dev/null 2>&1; }) \
    || echo "install.sh: could not install tmux; the tmux test will be skipped" >&2
fi
# a real browser for tests/race/test_race_serve.py (spectui serve): Debian's chromium
if [[ ${#extras[@]} -gt 0 ]] && ! command -v chromium >/dev/null 2>&1 && command -v apt-get >/dev/null 2>&1 && [[ $(id -u) == 0 ]]; then
  (DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium >/dev/null 2>&1 || { apt-get update -qq >/dev/null 2>&1 \
    && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium >/dev/null 2>&1; }) \
    || echo "install.sh: could not install chromium; the browser test will be skipped" >&2
fi
# a private sshd and the real client for tests/tui/test_ssh.py (ssh -tt ... spectui demo): Debian's OpenSSH
if [[ ${#extras[@]} -gt 0 ]] && ! { command -v sshd >/dev/null 2>&1 || [[ -x /usr/sbin/sshd ]]; } \
    && command -v apt-get >/dev/null 2>&1 && [[ $(id -u) == 0 ]]; then
  (DEBIAN_FRONTEND=noninteractive apt-get install -y -qq openssh-server openssh-client >/dev/null 2>&1 \
    || { apt-get update -qq >/dev/null 2>&1 \
    && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq openssh-server openssh-client >/dev/null 2>&1; }) \
    || echo "install.sh: could not install OpenSSH; the SSH test will be skipped" >&2
fi
[[ -x .venv/bin/python ]] || "$py" -m venv .venv
if [[ $live == 1 ]]; then
  bash scripts/build-llama-cpp-python.sh .venv/bin/python >/dev/null  # before spectui[live]: pip must not compile it
  extras+=(live)
fi
spec="."
if [[ ${#extras[@]} -gt 0 ]]; then spec=".[$(IFS=,; echo "${extras[*]}")]"; fi
# one build of spectui's wheel: a reinstall over an older copy of the same version replaces it (--force-reinstall
# --no-deps), a fresh venv needs only the second line
if .venv/bin/python -c "import spectui" >/dev/null 2>&1; then
  .venv/bin/python -m pip install -q --force-reinstall --no-deps .
fi
.venv/bin/python -m pip install -q "$spec"
check="import spectui, textual"
[[ $live == 1 ]] && check+=", llama_cpp"
.venv/bin/python -c "$check" || { echo "install.sh: install failed" >&2; exit 1; }
echo "spectui installed in $(pwd)/.venv (run .venv/bin/spectui)$([[ $live == 1 ]] || echo '; live runs: bash scripts/install.sh --live')" >&2
