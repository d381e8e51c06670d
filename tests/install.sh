#!/usr/bin/env bash
# Install what the test suite needs, on a clean CPU-only machine; safe to run again.
# The README's test command (and .ci/run) is: bash tests/install.sh && python3 -m pytest -q
set -euo pipefail
cd "$(dirname "$0")/.."
pip=(python3 -m pip install -q)
# torch==2.13.0 is the CPU build (a plain `torch` pulls GBs of CUDA libraries); triton 3.6.0 for
# its interpreter, which numpy 2.4 breaks; nvtx (capture's ranges)
"${pip[@]}" torch==2.13.0 "triton==3.6.0" "numpy<2.4" nvtx
"${pip[@]}" -e ".[test]"
# the dashboard's browser test: Debian's chromium, driven by Playwright for Python (Playwright's own
# browser download is not used)
if ! command -v chromium >/dev/null 2>&1; then
    sudo=""
    if [ "$(id -u)" -ne 0 ]; then sudo="sudo"; fi
    $sudo apt-get update -qq
    DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq chromium >/dev/null
fi
python3 -c "import playwright" 2>/dev/null || "${pip[@]}" playwright
