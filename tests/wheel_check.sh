#!/usr/bin/env bash
# The wheel as a user installs it, not the checkout: build it, install it (not editable) into a
# fresh venv, check that every package of the checkout is in it, then run `profkit list` and
# `profkit explain` (on the example run shipped in the wheel) from a folder outside the checkout.
# The venv sees the system's site-packages for the dependencies (offline and fast); profkit itself
# must come from the venv, which the check asserts. Run by tests/test_packaging.py.
set -euo pipefail
repo=$(cd "$(dirname "$0")/.." && pwd)
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
# built from a copy of the source files: setuptools would reuse a stale build/ of the checkout
mkdir "$tmp/src"
cd "$repo"
if git rev-parse --is-inside-work-tree >/dev/null 2>&1; then
    git ls-files -z -co --exclude-standard | xargs -0 cp --parents -t "$tmp/src" 2>/dev/null || true
else
    cp -r . "$tmp/src" && rm -rf "$tmp/src/build" "$tmp"/src/*.egg-info
fi
python3 -m pip wheel -q --no-deps --no-build-isolation "$tmp/src" -w "$tmp/dist" \
    2>"$tmp/build.log" || { cat "$tmp/build.log" >&2; exit 1; }
python3 -m venv --system-site-packages --without-pip "$tmp/venv"
py="$tmp/venv/bin/python"
python3 -m pip --python "$py" install -q --no-deps --no-index --ignore-installed \
    "$tmp"/dist/profkit-*.whl 2>"$tmp/install.log" || { cat "$tmp/install.log" >&2; exit 1; }
cd "$tmp"
# every folder of the checkout that holds Python is a package of the wheel, imported from the venv
"$py" - "$repo" "$tmp/venv" <<'PY'
import importlib, sys
from pathlib import Path

repo, venv = Path(sys.argv[1]), Path(sys.argv[2]).resolve()
wanted = {"profkit_lab": repo / "kernels"}
for init in (repo / "profkit").rglob("__init__.py"):
    wanted[".".join(init.parent.relative_to(repo).parts)] = init.parent
missing = []
for name, src in sorted(wanted.items()):
    mod = importlib.import_module(name)
    where = Path(list(mod.__path__)[0]).resolve()
    if venv not in where.parents:
        sys.exit(f"wheel check: {name} imports from {where}, not from the venv")
    shipped = {p.name for p in where.glob("*.py")}
    missing += [f"{name}/{p.name}" for p in src.glob("*.py") if p.name not in shipped]
if missing:
    sys.exit(f"wheel check: the wheel lacks {', '.join(missing)}")
print(f"wheel check: {len(wanted)} packages from the venv")
PY
"$tmp/venv/bin/profkit" list >list.txt
grep -q rmsnorm list.txt || { echo "wheel check: profkit list names no rmsnorm" >&2; exit 1; }
"$tmp/venv/bin/profkit" explain rmsnorm >explain.txt 2>explain.err
grep -q "example run shipped with profkit" explain.err \
    || { echo "wheel check: explain did not read the shipped example" >&2; exit 1; }
grep -q "ACTIVE TRACK\|WIN\|NOT A WIN" explain.txt \
    || { echo "wheel check: explain printed no verdict" >&2; cat explain.txt explain.err >&2; exit 1; }
echo "wheel check: profkit list and profkit explain ran from the installed wheel"
