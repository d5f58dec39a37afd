#!/usr/bin/env bash
# Fresh-machine install of spectui into ./.venv:
#   1. a virtual environment (.venv),
#   2. llama-cpp-python compiled for this CPU without -march=native (scripts/build-llama-cpp-python.sh;
#      ~6 minutes the first time, cached afterwards),
#   3. spectui itself (a plain, non-editable install, so packaged themes and the demo trace are tested).
# usage: bash scripts/install.sh [--test]     (--test adds the test dependencies, tmux for the tmux test and chromium for the browser test)
set -euo pipefail
cd "$(dirname "$0")/.."
py=${PYTHON:-python3}
extra=""
if [[ ${1:-} == --test ]]; then
  extra="[test]"
  if ! command -v tmux >/dev/null 2>&1 && command -v apt-get >/dev/null 2>&1 && [[ $(id -u) == 0 ]]; then
    (apt-get install -y -qq tmux >/dev/null 2>&1 || { apt-get update -qq >/dev/null 2>&1 && apt-get install -y -qq tmux >/dev/null 2>&1; }) \
      || echo "install.sh: could not install tmux; the tmux test will be skipped" >&2
  fi
  # a real browser for tests/test_race_serve.py (spectui serve): Debian's chromium
  if ! command -v chromium >/dev/null 2>&1 && command -v apt-get >/dev/null 2>&1 && [[ $(id -u) == 0 ]]; then
    (DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium >/dev/null 2>&1 || { apt-get update -qq >/dev/null 2>&1 \
      && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium >/dev/null 2>&1; }) \
      || echo "install.sh: could not install chromium; the browser test will be skipped" >&2
  fi
fi
[[ -x .venv/bin/python ]] || "$py" -m venv .venv
.venv/bin/python -m pip install -q -U pip
bash scripts/build-llama-cpp-python.sh .venv/bin/python >/dev/null
.venv/bin/python -m pip install -q --force-reinstall --no-deps .
.venv/bin/python -m pip install -q ".$extra"
.venv/bin/python -c "import spectui, llama_cpp, textual" || { echo "install.sh: install failed" >&2; exit 1; }
echo "spectui installed in $(pwd)/.venv (run .venv/bin/spectui)" >&2
