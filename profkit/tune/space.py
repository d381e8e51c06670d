"""A variant's tunable parameters: the grid, each configuration's name, and a spec to capture them.

A configuration is named by its place in the grid (g000, g001, ...: product order of the declared
values), so a name means the same parameters in every round and in the grid search. Capture runs a
configuration as a variant of a spec derived from the kernel's (configured_spec); ncu's worker
process finds that spec by importing a small generated file (spec_file), as it finds a user's.
"""

from __future__ import annotations

import itertools
import json
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from profkit.errors import ProfkitError
from profkit.spec import KernelSpec, Shape, Variant, find_spec, format_shape


@dataclass(frozen=True)
class Space:
    kernel: str
    variant: str
    values: dict[str, tuple]  # parameter -> candidate values, in declared order
    shipped: dict[str, Any]  # the parameters the variant ships at the tuned case
    added: tuple[str, ...] = ()  # parameters whose shipped value was not declared: added

    @property
    def names(self) -> tuple[str, ...]:
        return tuple(self.values)

    def grid(self) -> list[dict[str, Any]]:
        return [
            dict(zip(self.names, combo, strict=True))
            for combo in itertools.product(*self.values.values())
        ]

    @property
    def size(self) -> int:
        n = 1
        for v in self.values.values():
            n *= len(v)
        return n

    def name(self, params: dict[str, Any]) -> str:
        index = 0
        for p in self.names:
            index = index * len(self.values[p]) + self.values[p].index(params[p])
        return f"g{index:03d}"

    def params(self, name: str) -> dict[str, Any]:
        return self.grid()[int(name[1:])]

    def as_dict(self) -> dict:
        return {
            "kernel": self.kernel,
            "variant": self.variant,
            "values": {k: list(v) for k, v in self.values.items()},
            "shipped": self.shipped,
            "added": list(self.added),
            "size": self.size,
        }


def describe(params: dict[str, Any]) -> str:
    return " ".join(f"{k}={v}" for k, v in params.items())


def tunable_variant(spec: KernelSpec, variant: str | None) -> Variant:
    """The variant to tune: the one named, else the spec's only variant that declares tunables."""
    if variant:
        v = spec.variant(variant)
        if not v.tunables:
            raise ProfkitError(f"{spec.name} variant {variant!r} declares no tunables")
        return v
    found = [v for v in spec.variants if v.tunables]
    if not found:
        raise ProfkitError(f"{spec.name} has no variant with tunables (Variant(tunables=...))")
    if len(found) > 1:
        names = ", ".join(v.name for v in found)
        raise ProfkitError(f"{spec.name} has several tunable variants ({names}): pick --variant")
    return found[0]


def space_of(
    spec: KernelSpec,
    variant: Variant,
    shape: Shape,
    dtype: str,
    restrict: dict[str, tuple] | None = None,
) -> Space:
    """The grid of a variant at a case. restrict (--set NAME=V,...) keeps some values of a
    parameter; the shipped value joins a parameter's values when they lack it (said in added)."""
    values = {k: tuple(v) for k, v in (variant.tunables or {}).items()}
    for name, kept in (restrict or {}).items():
        if name not in values:
            raise ProfkitError(
                f"--set {name}: {spec.name} has no tunable {name!r}; known: {', '.join(values)}"
            )
        unknown = [v for v in kept if v not in values[name]]
        if unknown:
            raise ProfkitError(
                f"--set {name}: {unknown[0]!r} is not among its values "
                f"{', '.join(map(str, values[name]))}"
            )
        values[name] = tuple(kept)
    try:
        shipped = dict(variant.shipped(shape, dtype))  # type: ignore[misc]
    except Exception as exc:  # the spec's own code: its reason, in one line
        raise ProfkitError(
            f"{spec.name} {variant.name} at {dtype} {format_shape(shape)}: no shipped "
            f"configuration ({type(exc).__name__}: {exc})"
        ) from exc
    if set(shipped) != set(values):
        raise ProfkitError(
            f"{spec.name} {variant.name}: shipped() gives {sorted(shipped)}, the tunables are "
            f"{sorted(values)}"
        )
    added = []
    for name, value in shipped.items():
        if value not in values[name]:
            # in order, so that a step "up" or "down" a parameter's values still means that
            extended = (*values[name], value)
            try:
                values[name] = tuple(sorted(extended))
            except TypeError:  # values that do not order (strings among numbers)
                values[name] = extended
            added.append(name)
    return Space(spec.name, variant.name, values, shipped, tuple(added))


def configured_spec(
    kernel: str, from_file: str | None, variant: str, values: dict, names: list[str]
) -> KernelSpec:
    """The kernel's spec with one variant per named configuration (and no other)."""
    spec = find_spec(kernel, from_file)
    base = spec.variant(variant)
    space = Space(kernel, variant, {k: tuple(v) for k, v in values.items()}, {})
    out = []
    for name in names:
        params = space.params(name)
        fn = base.configure(params)  # type: ignore[misc]
        out.append(
            Variant(
                name,
                fn,
                description=describe(params),
                requires=base.requires,
                interpretable=base.interpretable,
            )
        )
    return replace(spec, variants=tuple(out))


def spec_file(folder: Path, space: Space, from_file: str | None, names: list[str]) -> Path:
    """A Python file defining configured_spec(...) for names: what capture, its ncu worker and a
    cluster's workers import (by path) to run the configurations."""
    args = json.dumps([space.kernel, from_file, space.variant, space.as_dict()["values"], names])
    path = folder / f"tune_spec_{names[0]}_{len(names)}.py"
    path.write_text(
        '"""Written by profkit tune: the configurations of one round, as variants."""\n'
        "import json\n\nfrom profkit.tune.space import configured_spec\n\n"
        f"SPEC = configured_spec(*json.loads({args!r}))\n"
    )
    return path
