#!/usr/bin/env bash
# What the tests need beyond the package: Debian's chromium and the Playwright driver for the
# dashboard's browser test (Playwright's own browser download is not used). Idempotent and quiet.
set -euo pipefail
if ! command -v chromium >/dev/null 2>&1; then
    SUDO=""
    if [ "$(id -u)" -ne 0 ]; then SUDO="sudo"; fi
    $SUDO apt-get update -qq
    DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq chromium >/dev/null
fi
python3 -c "import playwright" 2>/dev/null || python3 -m pip install -q playwright
