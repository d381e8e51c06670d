"""story.py's tables agree with each other, with the catalogue, and with what the stored runs say.

The engine (story.tell) decides nothing of its own: a cause named in a table that the catalogue
cannot find, a flag no slot reads, a bottleneck without a story, or a row no stored run reaches
is a table out of step with the code it stands for. The reachability tests read every diagnosis
made while the stored zoo, hold-out, lab and peer runs are explained (no history).
"""

from __future__ import annotations

from dataclasses import replace
from functools import cache
from pathlib import Path

from profkit import store
from profkit.explain import catalogue, run, story
from profkit.explain.bottleneck import OVERRIDES, classify
from profkit.explain.evidence import Evidence
from profkit.explain.model import Action, Bottleneck, Cause

DATA = Path(__file__).parent / "data"


def _slots() -> list[story.Slot]:
    """Every slot any table holds (the stories', what they look at, the opening, BEFORE's and
    WHY_SHORT's), tellers left out."""
    out = [*story.OPENING, *story.SHAPE, story.PIPES]
    for s in story.STORIES.values():
        out += [*s.slots, *s.look]
    for slots in story.BEFORE.values():
        out += slots
    for tier in story.WHY_SHORT:
        out += [slot for slot in tier if isinstance(slot, story.Slot)]
    return out


def _story_causes(kind: Bottleneck) -> set[Cause]:
    return {c for slot in (*story.OPENING, *story.STORIES[kind].slots) for c in slot.causes}


@cache
def _told() -> tuple[tuple, ...]:
    """(bottleneck, record, context, outcomes, said, evidence) for each diagnosis the stored runs
    make."""
    out = []
    real = story.tell

    def spy(kind, rec, ctx, ev, outcomes):
        unit, said = real(kind, rec, ctx, ev, outcomes)
        out.append((kind, rec, ctx, outcomes, said, ev))
        return unit, said

    folders = [DATA / d for d in ("zoo", "holdout", "runs", "peers")]
    paths = sorted(p for f in folders for p in f.iterdir() if (p / "manifest.json").exists())
    story.tell = spy
    try:
        for path in paths:
            run.explain_run(store.load(path), history_runs=[])
    finally:
        story.tell = real
    return tuple(out)


def test_every_bottleneck_diagnose_reaches_has_a_story() -> None:
    reached = {classify(m, s) for m in range(0, 101, 5) for s in range(0, 101, 5)}
    reached |= {made for _, _, made in OVERRIDES}
    assert reached <= set(story.STORIES), reached - set(story.STORIES)


def test_every_slot_names_causes_the_catalogue_can_find() -> None:
    """A slot's cause is an entry's, or one an entry's judgment ends in on a stored run."""
    entries = {e.cause for e in catalogue.CATALOGUE}
    ended = {c for *_, outcomes, _, _ in _told() for c in outcomes.found}
    for slot in _slots():
        for cause in slot.causes:
            assert isinstance(cause, Cause), slot
            assert cause in entries | ended, f"{cause}: no entry finds it"
    assert all(slot.causes for slot in _slots() if slot is not story.UNSEEN_HERE)


def test_every_entry_is_told_somewhere() -> None:
    """An entry evaluated on every launch but placed in no story would be judged and never said."""
    placed = {c for kind in story.STORIES for c in _story_causes(kind)}
    missing = {e.cause for e in catalogue.CATALOGUE} - placed
    assert not missing, f"entries no story says: {sorted(missing)}"


def test_flags_are_the_ones_slots_read() -> None:
    read = {s.when for s in _slots() if s.when} | {s.bare[0] for s in _slots() if s.bare}
    assert read == set(story.FLAGS), read ^ set(story.FLAGS)
    _, rec, ctx, outcomes, _, _ = _told()[0]
    assert set(story._flags(rec, ctx, outcomes, None)) == set(story.FLAGS)


def test_what_a_story_looks_at_first_it_says_in_its_slots() -> None:
    for kind, s in story.STORIES.items():
        for slot in s.look:
            assert set(slot.causes) <= _story_causes(kind), (kind, slot)


def test_unseen_is_declared_where_a_story_reaches_it() -> None:
    holding = {kind for kind, s in story.STORIES.items() if story.UNSEEN_HERE in s.slots}
    assert holding == set(story.UNSEEN)
    said = {kind for kind, *_, s, _ in _told() if any(r.cause == Cause.NO_CAUSE_SEEN for r, _ in s)}
    assert said & holding, "no stored run reaches a story's UNSEEN"


def test_unsaid_causes_are_refuted_and_keep_their_own_figures() -> None:
    """Each UNSAID cause is one an entry refutes; refuted on a stored launch, its figures under
    the declared prefix (one at least) are in the launch's evidence."""
    refuted = {c for e in catalogue.CATALOGUE for c in e.refutes}
    assert set(story.UNSAID) <= refuted
    for cause, own in story.UNSAID.items():
        kept = [
            ({k for k in outcomes.found[cause].evidence if k.startswith(own)}, ev)
            for *_, outcomes, _, ev in _told()
            if cause in outcomes.found and cause in outcomes.refuted
        ]
        assert kept, f"{cause}: refuted on no stored launch"
        assert all(keys and keys <= set(ev) for keys, ev in kept), cause


def test_before_is_said_first_under_each_bottleneck_that_declares_it() -> None:
    """Each BEFORE cause is in no slot of its story (said once, first), and a stored launch on
    which it is found says it first under each bottleneck naming it."""
    for kind, slots in story.BEFORE.items():
        for slot in slots:
            (cause,) = slot.causes
            assert cause not in _story_causes(kind)
            hit = next((t for t in _told() if any(r.cause == cause for r, _ in t[4])), None)
            assert hit is not None, f"{cause}: said on no stored run"
            _, rec, ctx, _, _, _ = hit
            rec = replace(rec, bottleneck=kind)
            _, said = story.tell(kind, rec, ctx, Evidence(), catalogue.evaluate(rec))
            assert said[0][0].cause == cause, (kind, [r.cause for r, _ in said])


def test_a_demoted_roof_leaves_the_others_without_its_steps() -> None:
    """Each DEMOTED cause is said beside another on a stored launch, which then carries none of
    the steps it demotes; and it is a roof: its own steps are none of those (a cause that
    demoted its own kind of step, more programs or more bytes in flight, would be no roof)."""
    for roof, actions in story.DEMOTED.items():
        beside = [s for *_, s, _ in _told() if len(s) > 1 and any(r.cause == roof for r, _ in s)]
        assert beside, f"{roof}: said beside another cause on no stored run"
        for said in beside:
            own = {a.action for r, steps in said if r.cause == roof for a in steps}
            others = {a.action for r, steps in said if r.cause != roof for a in steps}
            assert own and not own & actions, (roof, own)
            assert not others & actions, (roof, others)


def test_each_why_short_tier_is_reached() -> None:
    """Short of the roof with nothing named: each tier is why on some stored launch (the last,
    a teller, always says something)."""
    assert callable(story.WHY_SHORT[-1][0])
    after = [
        [r for r, _ in s[i + 1 :]]
        for *_, s, _ in _told()
        for i, (r, _) in enumerate(s)
        if r.cause in story.SHORT
    ]
    for tier in story.WHY_SHORT:
        causes = {c for slot in tier if isinstance(slot, story.Slot) and not slot.fact
                  for c in slot.causes}  # fmt: skip
        hit = any(
            r.cause in causes or (not causes and r.detail.get("short_of_roof"))
            for reasons in after
            for r in reasons
        )
        assert hit, f"no stored launch short of the roof is told {causes or 'the teller'}"


def test_sibling_step_replaces_an_empty_step_on_some_stored_launch() -> None:
    for cause in story.SIBLING_STEP:
        assert cause in story.SHORT  # beside a named cause only where short of the roof
        assert any(
            r.cause == cause and [a.action for a in steps] == [Action.MATCH_SIBLING]
            for *_, s, _ in _told()
            for r, steps in s
        ), f"{cause}: never given a sibling's step"
