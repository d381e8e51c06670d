"""What a kernel entry declares, and how entries are found (the lab's and a user's own file).

A spec is plain data plus callables; this module imports no torch, so the analysis half of profkit
(show, explain) runs on machines without it. The callables take and return torch tensors.
"""

from __future__ import annotations

import ast
import dataclasses
import importlib.machinery
import importlib.util
import operator
import re
import sys
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from profkit.dtypes import DTYPE_ALIASES
from profkit.errors import ProfkitError
from profkit.lab import lab_dir

Shape = tuple[int, ...]
DTYPE_ITEMSIZE = {
    "float16": 2,
    "bfloat16": 2,
    "float32": 4,
    "float64": 8,
    "float8_e4m3fn": 1,
    "float8_e5m2": 1,
    # integer kernels (the zoo's int8 GEMM, hashes, pointer chases): outputs checked exactly
    "int8": 1,
    "int32": 4,
}


@dataclass(frozen=True)
class Variant:
    """One implementation. `fn(inputs)` returns the output; when the spec's inputs hold an `out`
    tensor the variant may write into it (profkit poisons it first, so unwritten elements fail)."""

    name: str
    fn: Callable[[dict[str, Any]], Any]
    baseline: bool = False
    description: str = ""
    # a factory run once per process before first use (e.g. torch.compile); returns the callable
    prepare: Callable[[], Callable[[dict[str, Any]], Any]] | None = None
    # modules the variant imports (an optional extra's, e.g. liger_kernel): where one is missing,
    # capture skips the variant with a note instead of failing its cases
    requires: tuple[str, ...] = ()
    # False where its kernels cannot run under Triton's interpreter: capture --interpret skips it
    interpretable: bool = True
    # `profkit tune`: each parameter's candidate values, e.g. {"BLOCK": (256, 512, 1024),
    # "num_warps": (2, 4, 8)}; configure(params) returns the variant's callable at those values,
    # and shipped(shape, dtype) the params the variant ships at that case (fn's configuration)
    tunables: Mapping[str, tuple] | None = None
    configure: Callable[[dict[str, Any]], Callable[[dict[str, Any]], Any]] | None = None
    shipped: Callable[[Shape, str], dict[str, Any]] | None = None


@dataclass(frozen=True)
class KernelSpec:
    name: str
    description: str
    variants: tuple[Variant, ...]
    make_inputs: Callable[..., dict[str, Any]]  # (shape, dtype_name, device, generator) -> inputs
    reference: Callable[[dict[str, Any]], Any]  # float64 result from the same inputs
    dtypes: tuple[str, ...]
    shapes: tuple[Shape, ...]  # the default sweep
    tolerances: Mapping[str, tuple[float, float]]  # dtype -> (atol, rtol) against the reference
    bytes_moved: Callable[
        [Shape, int], int
    ]  # (shape, itemsize) -> minimum bytes (read once, write once)
    flops: Callable[[Shape], int]
    interpret_shapes: tuple[Shape, ...] = ((4, 64), (3, 100))  # small shapes for --interpret
    source: str = field(default="", compare=False)

    def variant(self, name: str) -> Variant:
        for v in self.variants:
            if v.name == name:
                return v
        known = ", ".join(v.name for v in self.variants)
        raise ProfkitError(f"{self.name} has no variant {name!r}; known: {known}")


def parse_shape(text: str) -> Shape:
    """'4096x8192' -> (4096, 8192); rejects anything that is not positive integers joined by x."""
    if not re.fullmatch(r"\s*\d+(\s*[xX]\s*\d+)*\s*", text or ""):
        raise ProfkitError(f"malformed shape {text!r}: write it as MxN, e.g. 4096x8192")
    dims = tuple(int(d) for d in re.split(r"[xX]", text.replace(" ", "")))
    if any(d <= 0 for d in dims):
        raise ProfkitError(f"malformed shape {text!r}: every dimension must be positive")
    return dims


def format_shape(shape: Shape) -> str:
    return "x".join(str(d) for d in shape)


def normalize_dtype(spec: KernelSpec, text: str) -> str:
    name = DTYPE_ALIASES.get(text.lower(), text.lower())
    if name not in spec.dtypes:
        raise ProfkitError(
            f"{spec.name} does not support dtype {text!r}; supported: {', '.join(spec.dtypes)}"
        )
    return name


def case_name(kernel: str, variant: str, dtype: str, shape: Shape) -> str:
    """The NVTX range name of a case. Dots, never '/': ncu reads '/' as range nesting."""
    return f"{kernel}.{variant}.{dtype}.{format_shape(shape)}"


# ---- finding specs -------------------------------------------------------------------------------


def load_module_specs(path: Path, module_name: str | None = None) -> dict[str, KernelSpec]:
    """Import a Python file by path and collect the KernelSpec objects it defines."""
    path = Path(path)
    if not path.is_file():
        raise ProfkitError(f"no such kernel file: {path}")
    module_name = module_name or f"profkit_user_{path.stem}"
    loader_spec = importlib.util.spec_from_file_location(module_name, path)
    if loader_spec is None or loader_spec.loader is None:
        raise ProfkitError(f"{path} is not an importable Python file")
    module = importlib.util.module_from_spec(loader_spec)
    sys.modules[module_name] = module
    try:
        loader_spec.loader.exec_module(module)
    except ModuleNotFoundError as exc:
        hint = _GPU_EXTRA if exc.name in ("torch", "triton", "nvtx") else ""
        raise ProfkitError(f"could not import {path}: {type(exc).__name__}: {exc}{hint}") from exc
    except SystemExit as exc:  # a script-style file that exits on import
        raise ProfkitError(f"could not import {path}: it called sys.exit({exc.code!r})") from exc
    except Exception as exc:  # the user's file: report its error in one line
        raise ProfkitError(f"could not import {path}: {type(exc).__name__}: {exc}") from exc
    found: dict[str, KernelSpec] = {}
    defined: dict[str, KernelSpec] = {}  # name -> the object (one spec under two names is one)
    for value in vars(module).values():
        if isinstance(value, KernelSpec):
            if value.name in defined and defined[value.name] is not value:
                raise _twice(value.name, path)
            defined[value.name] = value
            found[value.name] = KernelSpec(**{**value.__dict__, "source": str(path)})
            validate(found[value.name])
    return found


def _twice(name: object, path: Path) -> ProfkitError:
    return ProfkitError(
        f"{path} defines two kernel specs named {name!r}: one name, one spec (rename one)"
    )


_GPU_EXTRA = " (capture needs torch and triton: pip install -e '.[gpu]')"


def lab_files() -> list[Path]:
    return sorted(lab_dir().glob("[!_]*.py"))


def _lab_package() -> None:
    # register the folder as package `profkit_lab` so its modules import (and pickle, as
    # torch.compile's cache does) by name even when profkit runs from a checkout
    if "profkit_lab" not in sys.modules:
        package = importlib.util.module_from_spec(
            importlib.machinery.ModuleSpec("profkit_lab", None, is_package=True)
        )
        package.__path__ = [str(lab_dir())]
        sys.modules["profkit_lab"] = package


def lab_specs() -> dict[str, KernelSpec]:
    _lab_package()
    specs: dict[str, KernelSpec] = {}
    for path in lab_files():
        found = load_module_specs(path, f"profkit_lab.{path.stem}")
        _no_repeats(specs, found, path)
        specs.update(found)
    return specs


def _no_repeats(known: Mapping[str, Any], found: Mapping[str, Any], path: Path) -> None:
    """Two lab files defining one kernel name: refused, as two specs of one name in one file."""
    for name in found:
        if name in known:
            raise ProfkitError(
                f"kernel {name!r} is defined in {path} and in {known[name].source or 'another'} "
                "lab file: one name, one spec (rename one)"
            )


def find_spec(name: str, from_file: str | Path | None = None) -> KernelSpec:
    if not from_file:
        # read statically (each file once): import only the module that defines the name, so
        # another lab module's failing import (no torch, a broken file) is not this kernel's
        # problem, and an unknown name is an error before any import
        static = {path: _names(read_declared(path)) for path in lab_files()}
        home = [path for path, found in static.items() if found and name in found]
        if home:
            _lab_package()
            specs = load_module_specs(home[0], f"profkit_lab.{home[0].stem}")
            if name in specs:
                return specs[name]
        elif all(found is not None for found in static.values()):
            known = ", ".join(sorted(n for found in static.values() for n in found))
            raise ProfkitError(f"unknown kernel {name!r} in the lab; known: {known}")
    specs = load_module_specs(Path(from_file)) if from_file else lab_specs()
    if name not in specs:
        where = f"in {from_file}" if from_file else "in the lab"
        known = ", ".join(sorted(specs)) or "none"
        raise ProfkitError(f"unknown kernel {name!r} {where}; known: {known}")
    return specs[name]


# ---- listing without importing ------------------------------------------------------------------


@dataclass(frozen=True)
class SpecSummary:
    """What `profkit list` shows of a spec."""

    name: str
    variants: tuple[tuple[str, bool], ...]  # (name, baseline)
    dtypes: tuple[str, ...]
    shapes: tuple[Shape, ...]
    source: str = ""


def summarize(spec: KernelSpec) -> SpecSummary:
    return SpecSummary(
        spec.name,
        tuple((v.name, v.baseline) for v in spec.variants),
        spec.dtypes,
        spec.shapes,
        spec.source,
    )


def list_specs(from_file: str | Path | None = None) -> dict[str, SpecSummary]:
    """The summaries of the lab's specs (or a file's), read from the source where the fields are
    literals, so listing needs neither torch nor triton (nor runs the file's code); a file whose
    specs are built another way is imported. Either way a spec is validated as capture validates
    it (validate): what list shows, capture runs."""
    found: dict[str, SpecSummary] = {}
    for path in [Path(from_file)] if from_file else lab_files():
        static = read_summaries(path)
        if static is None:
            module = f"profkit_lab.{path.stem}" if not from_file else None
            if module:
                lab_specs()  # registers the profkit_lab package its modules import under
            static = {n: summarize(s) for n, s in load_module_specs(path, module).items()}
        _no_repeats(found, static, path)
        found.update(static)
    return found


def read_summaries(path: Path) -> dict[str, SpecSummary] | None:
    """The specs of a file read without running it (read_declared), validated; None when the
    file cannot be read that way."""
    declared = read_declared(path)
    if declared is None:
        return None
    summaries: dict[str, SpecSummary] = {}
    for spec in declared:
        if spec.name in summaries:
            raise _twice(spec.name, path)
        validate(spec)
        summaries[spec.name] = summarize(spec)
    return summaries


def read_declared(path: Path) -> list[KernelSpec] | None:
    """The module-level `NAME = KernelSpec(...)` entries of a file as written, read without
    running it (_declared). None when the file cannot be read that way (a syntax error, no such
    entry, or a field list and validate need that is not a literal or a module-level literal
    constant)."""
    try:
        tree = ast.parse(Path(path).read_text(), str(path))
    except (OSError, SyntaxError, ValueError):
        return None
    constants: dict[str, Any] = {}
    calls = []
    for node in tree.body:
        if isinstance(node, (ast.Assign, ast.AnnAssign)) and node.value is not None:
            if _called(node.value) == "KernelSpec":
                calls.append(node.value)
                continue
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            for target in targets:
                if isinstance(target, ast.Name):
                    try:
                        constants[target.id] = ast.literal_eval(node.value)
                    except ValueError:
                        constants.pop(target.id, None)
    # a KernelSpec built anywhere else (in a function, a loop) is only known by importing
    total = sum(_called(n) == "KernelSpec" for n in ast.walk(tree) if isinstance(n, ast.Call))
    if not calls or total != len(calls):
        return None
    try:
        return [_declared(KernelSpec, call, constants, str(path)) for call in calls]
    except (ValueError, TypeError, KeyError, AttributeError):
        return None


def _names(specs: list[KernelSpec] | None) -> set[str] | None:
    return None if specs is None else {str(s.name) for s in specs}


def unread(*args: Any, **kwargs: Any) -> Any:
    """A field of a spec read from its source (read_declared) that is not a literal: never run."""
    raise ProfkitError("this spec was read from its source without running it: import it to run")


# the fields list and validate need as literals; any other (a callable, a description) that is
# not a literal reads as `unread`, and one that is (None where a callable belongs) as written,
# for validate to refuse
_NEEDED = {"name", "variants", "dtypes", "shapes", "tolerances", "interpret_shapes", "baseline"}


def _declared(cls: type, call: ast.Call, constants: dict[str, Any], source: str) -> Any:
    """A KernelSpec or Variant call as written (see _NEEDED)."""
    names = [f.name for f in dataclasses.fields(cls)]
    if len(call.args) > len(names) or any(kw.arg is None for kw in call.keywords):
        raise ValueError("more positional fields than the dataclass has, or a ** splat")
    nodes = {**dict(zip(names, call.args, strict=False)), **{k.arg: k.value for k in call.keywords}}
    values: dict[str, Any] = {}
    for key, node in nodes.items():
        if key == "variants":
            values[key] = tuple(_variant(n, constants) for n in _elements(node))
        elif key in _NEEDED:
            values[key] = _literal(node, constants)
        else:
            try:
                values[key] = _literal(node, constants)
            except (ValueError, TypeError, KeyError):
                values[key] = unread
    if cls is KernelSpec:
        values["source"] = source
    return cls(**values)


def _variant(node: ast.AST, constants: dict[str, Any]) -> Variant:
    if _called(node) != "Variant":
        raise ValueError("a variant that is not a Variant(...) call")
    return _declared(Variant, node, constants, "")  # type: ignore[arg-type]


def _called(node: ast.AST) -> str | None:
    if not isinstance(node, ast.Call):
        return None
    func = node.func
    return func.id if isinstance(func, ast.Name) else getattr(func, "attr", None)


def _elements(node: ast.AST) -> list[ast.AST]:
    if not isinstance(node, (ast.Tuple, ast.List)):
        raise ValueError("variants is not a literal tuple or list")
    return list(node.elts)


# integer arithmetic a sweep may be written with ("1 << 26", "4 * 1024"), evaluated without running
# the file: only these operators, only on literal operands
_INT_OPS = {
    ast.Add: operator.add,
    ast.Sub: operator.sub,
    ast.Mult: operator.mul,
    ast.FloorDiv: operator.floordiv,
    ast.Pow: operator.pow,
    ast.LShift: operator.lshift,
}


def _literal(node: ast.AST, constants: dict[str, Any]) -> Any:
    if isinstance(node, ast.Name):
        return constants[node.id]
    if isinstance(node, (ast.Tuple, ast.List)):
        return tuple(_literal(e, constants) for e in node.elts)
    if isinstance(node, ast.BinOp) and type(node.op) in _INT_OPS:
        left, right = _literal(node.left, constants), _literal(node.right, constants)
        if not (isinstance(left, int) and isinstance(right, int)):
            raise ValueError("not an integer expression")
        if isinstance(node.op, (ast.Pow, ast.LShift)) and not 0 <= right <= 64:
            raise ValueError("an exponent or shift out of range")
        return _INT_OPS[type(node.op)](left, right)
    return ast.literal_eval(node)


# ---- validation when a spec loads ---------------------------------------------------------------


def tunables_problem(v: Variant) -> str | None:
    """What is wrong with a variant's tunables (None when it declares none, or they are sound):
    names that are identifiers, each a non-empty tuple of distinct values, and both callables."""
    if v.tunables is None and v.configure is None and v.shipped is None:
        return None
    if not isinstance(v.tunables, Mapping) or not v.tunables:
        return "tunables must map each parameter's name to its candidate values"
    for name, values in v.tunables.items():
        if not (isinstance(name, str) and name.isidentifier()):
            return f"tunable name {name!r} is not an identifier"
        if not isinstance(values, tuple) or not values:
            return f"tunable {name!r} must be a non-empty tuple of values"
        if len(set(values)) != len(values):
            return f"tunable {name!r} repeats a value"
    for which in ("configure", "shipped"):
        if not callable(getattr(v, which)):
            return f"tunables need a callable {which}"
    return None


def validate(spec: KernelSpec) -> None:
    """A spec that cannot run a sweep is refused when it loads, naming the field, rather than
    failing every case (or tracing back) half-way through a capture."""
    where = f"kernel spec {spec.name!r}" + (f" (in {spec.source})" if spec.source else "")

    def bad(field_name: str, what: str) -> ProfkitError:
        return ProfkitError(f"{where}: field {field_name}: {what}")

    if not isinstance(spec.variants, (tuple, list)) or not spec.variants:
        raise bad("variants", "at least one variant is required, as a tuple of Variant(...)")
    for v in spec.variants:
        if not isinstance(v, Variant):
            raise bad("variants", f"every entry must be a Variant(...), not {type(v).__name__}")
    check_names(spec)
    for name in ("make_inputs", "reference", "bytes_moved", "flops"):
        if not callable(getattr(spec, name)):
            raise bad(name, f"must be callable, not {type(getattr(spec, name)).__name__}")
    seen: set[str] = set()
    for v in spec.variants:
        if v.name in seen:
            raise bad("variants", f"the name {v.name!r} is used more than once")
        seen.add(v.name)
        if not callable(v.fn) or (v.prepare is not None and not callable(v.prepare)):
            which = "fn" if not callable(v.fn) else "prepare"
            raise bad("variants", f"variant {v.name!r}: its {which} must be callable")
        problem = tunables_problem(v)
        if problem:
            raise bad("variants", f"variant {v.name!r}: {problem}")
    if not isinstance(spec.dtypes, (tuple, list)) or not spec.dtypes:
        raise bad("dtypes", "at least one dtype is required, as a tuple of names")
    for d in spec.dtypes:
        if d not in DTYPE_ITEMSIZE:
            raise bad("dtypes", f"unknown dtype {d!r}; known: {', '.join(DTYPE_ITEMSIZE)}")
        tol = spec.tolerances.get(d) if isinstance(spec.tolerances, Mapping) else None
        if tol is None:
            raise bad("tolerances", f"no tolerance for dtype {d!r}")
        if not (
            isinstance(tol, (tuple, list))
            and len(tol) == 2
            and all(isinstance(t, (int, float)) and t >= 0 for t in tol)
        ):
            raise bad("tolerances", f"{d!r} must map to (atol, rtol), two numbers >= 0")
    for name in ("shapes", "interpret_shapes"):
        shapes = getattr(spec, name)
        if not isinstance(shapes, (tuple, list)) or not shapes:
            raise bad(name, "at least one shape is required, as a tuple of shapes")
        for shape in shapes:
            if not (
                isinstance(shape, tuple)
                and shape
                and all(isinstance(n, int) and n > 0 for n in shape)
            ):
                raise bad(name, f"{shape!r} is not a tuple of positive integers")


# kernel and variant names become directory names, NVTX range names (where ncu reads '/' as
# nesting) and text in HTML and markdown: letters, digits and _ . - only
_NAME_RE = re.compile(r"[A-Za-z0-9_][A-Za-z0-9_.-]*")


def check_names(spec: KernelSpec) -> None:
    """A kernel or variant name that cannot name a run or an NVTX range is an input error, found
    when the spec loads (validate) rather than when its run is stored."""
    for what, name in [("kernel", spec.name), *(("variant", v.name) for v in spec.variants)]:
        if not (isinstance(name, str) and _NAME_RE.fullmatch(name)):
            raise ProfkitError(
                f"{what} name {name!r} (in {spec.source or 'its spec'}) may hold only letters, "
                "digits, '_', '.' and '-' (it names the run directory and the NVTX ranges)"
            )
