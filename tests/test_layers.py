"""The layers of profkit, kept by a test: each part of the package may import only the parts in
the layers below its own, so that the pipeline reads from the folder list (capture -> measure ->
counters -> store) and the analysis half (explain, dashboard) runs anywhere on stored runs,
reading the store and the statistics only. Imports are read from the source, at module level and
inside functions (tests/test_import_cycles.py's reader)."""

from __future__ import annotations

from test_import_cycles import PACKAGE, imports, modules

# Bottom first. A part is a top-level module or subpackage of profkit; a part may import the parts
# of any layer below its own, and none of its own layer or above.
LAYERS: list[set[str]] = [
    # constants, errors and text helpers: import nothing of profkit
    {
        "thresholds",
        "errors",
        "exitcodes",
        "failures",
        "textsafe",
        "terminal",
        "peaks",
        "dtypes",
        "lab",
    },
    # pure statistics on numbers and tables (the median ratio, the tail, throttle names)
    {"stats"},
    # what a kernel entry declares (variants, reference, shapes, bytes and FLOPs)
    {"spec", "compile_baseline"},
    # stored runs: written atomically, loaded and migrated
    {"store"},
    # Nsight Compute: the child process, its reports, counters joined to cases
    {"counters"},
    # running kernels: correctness, device time, host cost, clocks; the program ncu profiles
    {"measure"},
    {"hostenv", "ncu_program"},
    # findings from stored runs
    {"explain"},
    # pages from stored runs and their findings
    {"dashboard"},
    # whole commands' work: a capture, a cluster sweep, a program's profile, the doctor, compare
    {"capture", "workload", "compare", "doctor"},
    # a sweep over a cluster; the tuning loop, whose rounds are captures or cluster sweeps
    {"cluster"},
    {"tune"},
    # what explains and draws each kind of run
    {"run_kinds"},
    # the command line, which wires the rest
    {"cli"},
    {"__main__"},
]

# the analysis half needs no GPU and no torch: it reads the store and the statistics only
ANALYSIS = {"explain", "dashboard"}
ANALYSIS_READS = {
    "store",
    "stats",
    "thresholds",
    "errors",
    "textsafe",
    "terminal",
    "peaks",
    "dtypes",
}
ANALYSIS_READS |= {"lab"}  # explain reads the lab notebook's ruled-out designs


def _part(module: str) -> str:
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else "__init__"


def _arrows() -> set[tuple[str, str, str]]:
    """(importing part, imported part, importing module) for every import between two parts."""
    known = modules(PACKAGE)
    out = set()
    for name, path in known.items():
        for dep in imports(name, path, known, lazy=True):
            a, b = _part(name), _part(dep)
            if a != b and "__init__" not in (a, b):
                out.add((a, b, name))
    return out


def test_every_part_has_a_layer() -> None:
    placed = set().union(*LAYERS)
    parts = {_part(m) for m in modules(PACKAGE)} - {"__init__", "examples"}
    assert parts <= placed, f"parts in no layer: {sorted(parts - placed)}"


def test_nothing_imports_its_own_layer_or_above() -> None:
    level = {part: i for i, layer in enumerate(LAYERS) for part in layer}
    upward = sorted(
        f"{module} imports profkit.{b}" for a, b, module in _arrows() if level[b] >= level[a]
    )
    assert not upward, "\n".join(upward)


def test_the_analysis_half_reads_the_store_and_the_statistics_only() -> None:
    wider = sorted(
        f"{module} imports profkit.{b}"
        for a, b, module in _arrows()
        if a in ANALYSIS and b not in ANALYSIS_READS and b not in ANALYSIS
    )
    assert not wider, "\n".join(wider)


def test_every_source_the_thresholds_cite_is_in_the_repository() -> None:
    """Issue 32: thresholds.py cites its sources as files; each is inside the repository (a run
    kept under tests/data, a measurement note under docs/), never one beside it."""
    import re

    text = (PACKAGE / "thresholds.py").read_text()
    assert "../" not in text and "profiles/" not in text
    cited = re.findall(r"\b((?:docs|tests|profkit|kernels|zoo|holdout|jobs)/[\w./-]*\w)", text)
    assert cited
    missing = sorted({c for c in cited if not (PACKAGE.parent / c).exists()})
    assert not missing, missing
