"""How long a job may run, how it is retried, and the sweeper's rhythm.

Four timing values must keep a chain (a live job never loses its lease; Redis never
redelivers a job whose worker is alive; one call never outlives the lease). They are
derived from two knobs, RECAP_TASK_TIME_LIMIT_S and RECAP_RETRY_BACKOFF_MAX_S, unless
set explicitly; explicit values are validated against the chain.
"""

from __future__ import annotations

import math
from typing import Any

from pydantic import BaseModel, Field, model_validator

from recap.config.base import MAX_SECONDS

TIME_LIMIT_DEFAULT = 300
BACKOFF_MAX_DEFAULT = 300.0
# Redis redelivers unacknowledged jobs after the visibility timeout: an hour at
# least, so a worker briefly stalled (GC, a slow disk) is not raced by a duplicate.
VISIBILITY_FLOOR_S = 3600

# field -> how it is derived from T (RECAP_TASK_TIME_LIMIT_S) and B
# (RECAP_RETRY_BACKOFF_MAX_S) when unset or empty; docs/SETTINGS.md shows these.
DERIVED = {
    "task_soft_time_limit_s": "T - max(1, T/5)",
    "lease_s": "T + max(1, T/5)",
    "visibility_timeout_s": f"max({VISIBILITY_FLOOR_S}, 2 * (T + B))",
    "llm_timeout_s": "T / 10",
}


def _number(raw: object, default: float) -> float | None:
    """``raw`` as a finite number (unset or blank: ``default``); None when invalid,
    so the field's own validation names the problem."""
    if raw is None or (isinstance(raw, str) and not raw.strip()):
        return default
    if not isinstance(raw, str | int | float):
        return None
    try:
        value = float(raw)
    except ValueError:
        return None
    return value if math.isfinite(value) else None


def derive_timings(data: dict[str, Any]) -> dict[str, Any]:
    """``data`` with each DERIVED value that is unset or blank filled in from the knobs."""
    limit = _number(data.get("task_time_limit_s"), TIME_LIMIT_DEFAULT)
    backoff = _number(data.get("retry_backoff_max_s"), BACKOFF_MAX_DEFAULT)
    if limit is None or backoff is None:  # the knob's own error says it; blanks are unset
        return {k: v for k, v in data.items()
                if not (k in DERIVED and isinstance(v, str) and not v.strip())}
    t = int(limit)
    derived = {
        "task_soft_time_limit_s": t - max(1, t // 5),
        "lease_s": t + max(1, t // 5),
        "visibility_timeout_s": max(VISIBILITY_FLOOR_S, math.ceil(2 * (t + backoff))),
        "llm_timeout_s": limit / 10,
    }
    out = dict(data)
    for field, value in derived.items():
        raw = out.get(field)
        if raw is None or (isinstance(raw, str) and not raw.strip()):
            out[field] = value
    return out


class Timing(BaseModel):
    """Job timing and retries.

    Set RECAP_TASK_TIME_LIMIT_S (how long one job may run) and, if needed,
    RECAP_RETRY_BACKOFF_MAX_S; the soft limit, the lease, the broker's visibility
    timeout and the per-call timeout follow from them. Set any of those four only to
    depart from the derived value: Recap refuses values that break the chain.
    """

    task_time_limit_s: int = Field(TIME_LIMIT_DEFAULT, ge=6, le=MAX_SECONDS, description=(
        "Knob: seconds one job may run before its process is killed (hard limit)."))
    retry_backoff_max_s: float = Field(BACKOFF_MAX_DEFAULT, ge=0.01, le=MAX_SECONDS,
                                       description="Knob: cap of the retry backoff (seconds).")
    max_retries: int = Field(5, ge=0, le=50, description=(
        "Celery retries of a transient failure before the run is dead-lettered."))
    retry_backoff_s: float = Field(5.0, ge=0.01, le=MAX_SECONDS, description=(
        "Base of the exponential backoff with full jitter (seconds)."))
    task_soft_time_limit_s: int = Field(240, ge=5, le=MAX_SECONDS, description=(
        "Soft limit: the job gets an exception and gives up cleanly."))
    lease_s: int = Field(360, ge=2, le=MAX_SECONDS, description=(
        "A job's hold on its session; above the hard limit, so a live job keeps it."))
    visibility_timeout_s: int = Field(3600, ge=10, le=MAX_SECONDS, description=(
        "Redis redelivers an unacknowledged job after this; above limit + backoff cap."))
    # The SDK's own retries are off: Celery owns retrying, so a job holds a worker
    # slot for at most one request timeout per chunk. A total deadline per call
    # (recap.llm.deadline), not only per socket read.
    llm_timeout_s: float = Field(30.0, ge=0.1, le=600, description=(
        "Seconds one Claude request may take in total before it is abandoned and retried."))
    # After this many claims that found the previous holder's lease expired (its
    # worker died mid-job), the session is dead-lettered instead of run again.
    max_lost_leases: int = Field(3, ge=1, le=1000, description=(
        "Expired leases in a row (dead workers) before a session is dead-lettered."))

    @model_validator(mode="before")
    @classmethod
    def _derive(cls, data: Any) -> Any:
        return derive_timings(data) if isinstance(data, dict) else data

    @model_validator(mode="after")
    def _check_chain(self) -> Timing:
        # The derived values keep the chain by construction, so a broken link is one
        # set by hand: each error leads with it.
        if self.task_time_limit_s <= self.task_soft_time_limit_s:
            raise ValueError(f"RECAP_TASK_SOFT_TIME_LIMIT_S ({self.task_soft_time_limit_s}) "
                             f"must be below RECAP_TASK_TIME_LIMIT_S ({self.task_time_limit_s})")
        if self.lease_s <= self.task_time_limit_s:
            raise ValueError("RECAP_LEASE_S must be greater than RECAP_TASK_TIME_LIMIT_S "
                             "(a running job must never lose its lease)")
        if self.visibility_timeout_s <= self.task_time_limit_s + self.retry_backoff_max_s:
            raise ValueError("RECAP_VISIBILITY_TIMEOUT_S must be greater than "
                             "RECAP_TASK_TIME_LIMIT_S + RECAP_RETRY_BACKOFF_MAX_S")
        if self.llm_timeout_s >= self.lease_s:
            raise ValueError(f"RECAP_LLM_TIMEOUT_S ({self.llm_timeout_s:g}) must be below "
                             f"RECAP_LEASE_S ({self.lease_s}): one call must never outlive "
                             "the job's lease")
        return self


class Sweeper(BaseModel):
    """The sweeper (celery beat).

    It re-queues sessions whose job was lost and retries dead-lettered ones.
    """

    enqueue_stale_s: int = Field(900, ge=1, le=MAX_SECONDS, description=(
        "A queued-but-unstarted marker older than this counts as lost and is re-queued."))
    sweep_interval_s: float = Field(300.0, ge=1, le=86400, description=(
        "Seconds between sweeps (read by beat): at least a second, at most a day."))
    sweep_batch: int = Field(500, ge=1, le=100_000, description=(
        "Sessions queued per sweep at most."))
    dead_cooldown_s: int = Field(3600, ge=0, le=MAX_SECONDS, description=(
        "Seconds a dead-lettered session is left alone before the sweeper tries again."))
