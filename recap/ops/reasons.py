"""The reason class of a summary run: the ``reason`` label of ``recap_runs_total``,
computed in SQL from what summary_runs records (recap.ops.metrics)."""

from __future__ import annotations

from sqlalchemy import ColumnElement, case, literal

from recap.core.planning.policy import Mode
from recap.models import SummaryRun

# The reason class of a run, from the start of summary_runs.reason (recap.core.planning.policy
# and recap.worker.jobs.claim/summarize/archive write these texts). First match wins;
# a run whose text matches none but that recorded the rule of its plan
# (summary_runs.mode: the adaptive policy's "adaptive: ..." plans are normal ones)
# is that rule, as `recap stats` and the audit row name it; anything else
# (including no reason) is "other".
REASON_CLASSES: tuple[tuple[str, str], ...] = (
    # A plan with a mode but no batch: recorded as skipped.
    ("%; nothing outside the keep window can be condensed%", "nothing-to-condense"),
    ("normal:%", "normal"),
    ("capacity:%", "capacity"),
    ("aggressive:%", "aggressive"),
    ("forced:%", "forced"),
    ("below thresholds:%", "below-thresholds"),
    # Adaptive, past the high-water mark: the fold would cost more than it saves.
    ("%; past it, the cached prefix is cheaper to keep%", "prefix-cheaper"),
    ("lease held by another job%", "lease-held"),
    ("session % not found", "not-found"),
    ("rejected session id:%", "rejected-id"),
    ("worker lost % times in a row%", "lost-leases"),
    ("%(fix chat_sessions.overrides, then recap retry)", "invalid-overrides"),
    ("resummarized from %", "resummarize"),
    ("session % changed during resummarize%", "resummarize"),
    ("the lease or summary version changed during the call%", "lease-or-version-changed"),
    ("% batch messages were already gone%", "batch-gone"),
)
OTHER = "other"
# summary_runs.mode values that name the rule of a plan that condensed something.
FOLD_MODES = tuple(str(m) for m in Mode if m is not Mode.NONE)


def reason_class() -> ColumnElement[str]:
    """summary_runs.reason mapped to its class (see REASON_CLASSES), in SQL; a
    reason of no class is its recorded mode (FOLD_MODES) when there is one."""
    return case(*((SummaryRun.reason.like(pattern), literal(name))
                  for pattern, name in REASON_CLASSES),
                (SummaryRun.mode.in_(FOLD_MODES), SummaryRun.mode), else_=literal(OTHER))
