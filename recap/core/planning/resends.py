"""How often a job may send its batch to the model again (pure), given how the
model's latest folds went.

A job asks the model once, then again another way after an unusable answer, up
to RECAP_MAX_RESENDS times, and keeps the batch extractively when no way works
(recap.worker.jobs.fallback). A model that never gives a usable answer (too small
for the prompt, or overloaded) pays for every one of those calls at every fold,
and a fold on a CPU takes minutes each. So once the model's latest folds were all
kept extractively, a job asks it once, without resends; every few folds of such a
streak it is given its full resends again (a probe), so a model that recovers, or
a prompt that changed, gets them back at once. Every fold still asks the model.
The folds read are the tenant's own (recap.store.runs.recent_folds): what one
tenant sends never withholds another tenant's resends.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import NamedTuple

# The model's latest applied folds (any session of the tenant) that must all have
# been kept extractively before its resends are withheld.
FALLBACK_STREAK = 3
# Within such a streak, the fold after this many withheld ones gets the full
# resends (a probe).
PROBE_EVERY = 5
# The latest folds read: enough to see the streak and the withheld folds since
# the last probe.
WINDOW = FALLBACK_STREAK + PROBE_EVERY


class FoldOutcome(NamedTuple):
    """One of the model's earlier applied folds: whether it was kept extractively,
    and how many times its batch was sent again."""

    extractive: bool
    resends: int


def streak(recent: Sequence[FoldOutcome]) -> int:
    """How many of ``recent`` (newest first) in a row, from the newest, were kept
    extractively."""
    return _leading(recent, asked_once=False)


def allowed(recent: Sequence[FoldOutcome], configured: int) -> int:
    """The resends a job may make now: ``configured`` (RECAP_MAX_RESENDS), or none
    while the model's ``recent`` folds (newest first, at most WINDOW) were all kept
    extractively, FALLBACK_STREAK of them or more. After PROBE_EVERY - 1 folds in a
    row kept extractively without a resend, the next gets ``configured`` (a probe)."""
    if configured < 0:
        raise ValueError(f"configured resends must be at least 0, got {configured}")
    if streak(recent) < FALLBACK_STREAK:
        return configured
    return configured if _leading(recent, asked_once=True) >= PROBE_EVERY - 1 else 0


def _leading(recent: Sequence[FoldOutcome], *, asked_once: bool) -> int:
    """How many of ``recent``, from the newest, were kept extractively (and, with
    ``asked_once``, without a resend)."""
    n = 0
    for fold in recent:
        if not fold.extractive or (asked_once and fold.resends):
            break
        n += 1
    return n


def withheld_note(recent: Sequence[FoldOutcome], *, tenant: str | None = None) -> str:
    """The run's reason note when :func:`allowed` withholds the resends; ``recent``
    are the folds of ``tenant``'s sessions (None: of ids without a tenant), and the
    note says so: it describes no other tenant's folds."""
    whose = (f"of tenant {tenant!r}'s sessions" if tenant is not None
             else "of sessions outside any tenant")
    return (f"resends withheld: the model's last {streak(recent)} folds {whose} were kept "
            f"extractively (asked once; a probe with full resends every {PROBE_EVERY} folds)")
