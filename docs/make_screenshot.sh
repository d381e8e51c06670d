#!/usr/bin/env bash
# docs/dashboard.png, the README's picture: the dashboard of the example run (profkit/examples/),
# generated into a temp folder and drawn by Debian's chromium, headless. Run from anywhere.
set -euo pipefail
repo=$(cd "$(dirname "$0")/.." && pwd)
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
cd "$repo"
python3 -m profkit dashboard rmsnorm --profiles profkit/examples --out "$tmp/rmsnorm.html"
chromium --headless --no-sandbox --disable-gpu --hide-scrollbars --window-size=1280,1500 \
    --virtual-time-budget=15000 --screenshot="$repo/docs/dashboard.png" \
    "file://$tmp/rmsnorm.html" 2>/dev/null
echo "wrote docs/dashboard.png"
