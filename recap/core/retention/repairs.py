"""When the retention guard's repair call is worth making, for a model (pure).

A repair call asks the model to put the specifics its summary missed back in.
A strong model usually does; a weak one may return the same summary every time,
and each call is paid for. So the guard keeps a running success rate per model
over its latest runs that had something missing, and stops calling repair when
it does not help: the details section and memories keep those specifics anyway.
A skipped model is probed again now and then, so a model that improves (or a
prompt that changed) gets its repairs back.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import NamedTuple

# The model's latest runs with something missing that the rate is taken over.
REPAIR_WINDOW = 20
# Fewer repair calls than this in the window: too few to judge, keep calling.
REPAIR_MIN_TRIES = 5
# Below this share of repair calls that reduced what was missing, stop calling.
REPAIR_MIN_SUCCESS = 0.2
# After this many skipped runs in a row, call repair once more (a probe).
REPAIR_PROBE_EVERY = 10


class RepairOutcome(NamedTuple):
    """One earlier run with something missing: whether repair was called, and
    whether it reduced what was missing."""

    called: bool
    helped: bool


def success_rate(recent: Sequence[RepairOutcome]) -> float | None:
    """The share of repair calls in ``recent`` that helped; None without any."""
    tried = [o.helped for o in recent if o.called]
    return sum(tried) / len(tried) if tried else None


def should_repair(recent: Sequence[RepairOutcome]) -> bool:
    """Whether to call repair now, given the model's ``recent`` runs (newest first,
    at most REPAIR_WINDOW)."""
    recent = recent[:REPAIR_WINDOW]
    if sum(o.called for o in recent) < REPAIR_MIN_TRIES:
        return True
    rate = success_rate(recent)
    if rate is None or rate >= REPAIR_MIN_SUCCESS:
        return True
    skipped = next((i for i, o in enumerate(recent) if o.called), len(recent))
    return skipped >= REPAIR_PROBE_EVERY
