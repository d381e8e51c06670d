#!/usr/bin/env bash
# The wheel as a user installs it, not the checkout: build it, install it (not editable) into a
# fresh venv, check that every package of the checkout is in it, then run `profkit list` and
# `profkit explain` (on the example run shipped in the wheel) from a folder outside the checkout.
# The dependencies come from the interpreter that runs this script, whatever it is (the system
# Python, a venv, conda): the new venv's own site-packages names that interpreter's site folders
# in a .pth, so nothing is downloaded (offline and fast). `--system-site-packages` would give the
# base interpreter's folders instead, which inside a user's venv lack what the venv installed.
# profkit itself must come from the new venv, and each dependency from where the running
# interpreter finds it: the check asserts both. Run by tests/test_packaging.py.
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
python3 -m venv --without-pip "$tmp/venv"
py="$tmp/venv/bin/python"
# the running interpreter's site folders (its .pth files processed, as they are for it), after the
# venv's own, so the wheel's profkit wins over an editable install of the checkout
python3 - "$("$py" -c 'import sysconfig; print(sysconfig.get_path("purelib"))')" <<'PY'
import site, sys
from pathlib import Path

dirs = [*site.getsitepackages(), *([site.getusersitepackages()] if site.ENABLE_USER_SITE else [])]
lines = [f"import site; site.addsitedir({d!r})" for d in dict.fromkeys(dirs) if Path(d).is_dir()]
(Path(sys.argv[1]) / "_outer_site.pth").write_text("\n".join(lines) + "\n")
PY
python3 -m pip --python "$py" install -q --no-deps --no-index --ignore-installed \
    "$tmp"/dist/profkit-*.whl 2>"$tmp/install.log" || { cat "$tmp/install.log" >&2; exit 1; }
cd "$tmp"
# every folder of the checkout that holds Python is a package of the wheel, imported from the venv
deps=$(python3 -c 'import click, numpy, pandas, plotly, rich
print(" ".join(m.__file__ for m in (click, numpy, pandas, plotly, rich)))')
"$py" - "$repo" "$tmp/venv" "$deps" <<'PY'
import importlib, sys
from pathlib import Path

repo, venv = Path(sys.argv[1]), Path(sys.argv[2]).resolve()
# each dependency from the interpreter that runs the check, not from the base one under a venv
for outer in sys.argv[3].split():
    name = Path(outer).parent.name
    mine = importlib.import_module(name).__file__
    if Path(mine).absolute() != Path(outer).absolute():  # not resolved: a venv may hold links
        sys.exit(f"wheel check: {name} imports from {mine}, not from {outer} as the caller's does")
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
