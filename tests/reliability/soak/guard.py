"""The retention guard's part of the soak (``--lossy-specifics``): planted specifics,
the guard's counts from summary_runs, and what the invariant found lost."""

from __future__ import annotations

import random
from collections.abc import Mapping

from sqlalchemy import func, select
from sqlalchemy.orm import Session

GUARD_COLUMNS = ("specifics_missing_before_repair", "specifics_missing_after",
                 "specifics_in_details", "specifics_to_memories", "messages_held_back")


def planted(rng: random.Random) -> str:
    """Specifics a summary must keep: a version, a time, an amount, a ticket."""
    return (f" Release v{rng.randrange(10)}.{rng.randrange(40)}.{rng.randrange(9)} at "
            f"{rng.randrange(24):02d}:{rng.randrange(60):02d}, budget "
            f"${rng.randrange(1, 90)},{rng.randrange(1000):03d}, ticket "
            f"INC-{rng.randrange(10**5)}.")


def guard_counts(s: Session) -> dict[str, int]:
    """The guard's counts summed over applied runs, and the repair calls made."""
    from recap.models import SummaryRun

    sums = s.execute(select(*(func.coalesce(func.sum(getattr(SummaryRun, n)), 0)
                              for n in GUARD_COLUMNS),
                            func.count().filter(SummaryRun.repaired.is_(True)))
                     .where(SummaryRun.status == "applied")).one()
    return {**dict(zip(GUARD_COLUMNS, map(int, sums[:-1]), strict=True)),
            "repair_calls": int(sums[-1])}


def specifics_figures(texts: Mapping[str, Mapping[int, str]],
                      problems: list[str]) -> tuple[int, int]:
    """(specifics planted in what was written, specifics the invariant found lost)."""
    from recap.core.specifics import extract_specifics

    planted_n = sum(len(extract_specifics(t)) for by_id in texts.values()
                    for t in by_id.values())
    lost = sum(int(p.split(" and ", 1)[1].split(" of its", 1)[0])
               for p in problems if "specifics are lost" in p)
    return planted_n, lost
