#!/usr/bin/env bash
# Install what the test suite needs, on a clean CPU-only machine; safe to run again, and a
# second's no-op when everything is already in place.
# The README's test command (and .ci/run) is: bash tests/install.sh && python3 -m pytest -q
set -euo pipefail
cd "$(dirname "$0")/.."
pip=(python3 -m pip install -q)
# torch==2.13.0 is the CPU build (a plain `torch` pulls GBs of CUDA libraries); triton 3.6.0 for
# its interpreter, which numpy 2.4 breaks; nvtx (capture's ranges)
stack=(torch==2.13.0 "triton==3.6.0" "numpy<2.4" nvtx)

# In place already: this checkout installed editable, and every requirement of the stack above and
# of pyproject.toml (with the test extra) met. pip takes 15 s to find that out for itself.
installed() {
    python3 - "$PWD" "${stack[@]}" <<'PY' 2>/dev/null
import json, sys, tomllib
from importlib.metadata import PackageNotFoundError, distribution, version
from pathlib import Path

from packaging.requirements import Requirement

root, stack = Path(sys.argv[1]), sys.argv[2:]
url = json.loads(distribution("profkit").read_text("direct_url.json") or "{}")
if not url.get("dir_info", {}).get("editable") or url.get("url") != root.as_uri():
    sys.exit(1)
project = tomllib.loads((root / "pyproject.toml").read_text())["project"]
for line in [*stack, *project["dependencies"], *project["optional-dependencies"]["test"]]:
    req = Requirement(line)
    try:
        if not req.specifier.contains(version(req.name), prereleases=True):
            sys.exit(1)
        for extra in req.extras:  # e.g. dask[distributed]: what that extra pulls in, one level
            for dep in map(Requirement, distribution(req.name).requires or ()):
                if dep.marker and dep.marker.evaluate({"extra": extra}):
                    version(dep.name)
    except PackageNotFoundError:
        sys.exit(1)
PY
}

if ! installed; then
    "${pip[@]}" "${stack[@]}"
    "${pip[@]}" -e ".[test]"
fi
# the dashboard's browser test: Debian's chromium, driven by Playwright for Python (Playwright's own
# browser download is not used)
if ! command -v chromium >/dev/null 2>&1; then
    sudo=""
    if [ "$(id -u)" -ne 0 ]; then sudo="sudo"; fi
    $sudo apt-get update -qq
    DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq chromium >/dev/null
fi
python3 -c "import playwright" 2>/dev/null || "${pip[@]}" playwright
