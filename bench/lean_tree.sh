#!/usr/bin/env bash
# The device tool sends the whole working tree (64 MiB at most); with every committed run the
# tracked files pass that (70 MB on 2026-12-01). A device call needs none of the stored ncu
# reports nor the dashboards' plotly.min.js, so before a call:
#   bash bench/lean_tree.sh strip     # delete them from the working tree (they stay committed)
# and after it (also after a failed call):
#   bash bench/lean_tree.sh restore   # git checkout them back
# Refuses to strip with uncommitted changes under those folders, so nothing unstored is lost.
set -eu
cd "$(git rev-parse --show-toplevel)"
case ${1:-} in
  strip)
    if [ -n "$(git status --porcelain -- profiles bench/results dashboards)" ]; then
      echo "lean_tree: uncommitted changes under profiles/, bench/results/ or dashboards/" >&2
      exit 1
    fi
    find profiles bench/results -name '*.ncu-rep.xz' -delete
    rm -f dashboards/plotly.min.js
    git ls-files -z | xargs -0 du -cb 2>/dev/null | tail -1 ;;
  restore) git checkout -- profiles bench/results dashboards ;;
  *) echo "usage: bash bench/lean_tree.sh strip|restore" >&2; exit 2 ;;
esac
