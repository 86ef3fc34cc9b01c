"""Constants and types the setting groups share."""

from __future__ import annotations

from collections.abc import Collection
from typing import Annotated, Any

from pydantic import BaseModel, StringConstraints, ValidationInfo

from recap.paths import default_broker_path, default_database_path

# The embedded default: one SQLite file for data and one for the broker, so
# `recap demo` and a first `celery -A recap worker` need no services at all.
# RECAP_ENV=production refuses to start on these defaults. Both live in the
# user's data directory (recap/paths.py), never the current one.
DEFAULT_DATABASE_URL = f"sqlite:///{default_database_path()}"
DEFAULT_BROKER_URL = f"sqla+sqlite:///{default_broker_path()}"

# A current Haiku-class model from the installed SDK's model list: summaries are
# a high-volume, low-difficulty job, so the cheapest fast tier fits.
DEFAULT_MODEL = "claude-haiku-5-5"

# summary_runs.model is VARCHAR(100): a longer id (a Bedrock or Vertex ARN, say)
# would fail every apply and every failure record, so it is refused up front.
MODEL_MAX_CHARS = 100
# The longest any time setting may be: beyond it, datetime arithmetic overflows
# (1e12 s) long before the setting means anything.
MAX_SECONDS = 30 * 24 * 3600
# The largest token count a setting may name (a budget, a trigger): above every
# model's context window, and small enough that arithmetic on it stays exact.
MAX_TOKENS = 10_000_000
# The longest URL a setting may hold (a database, a broker, an endpoint).
MAX_URL_CHARS = 2000
# Names (queue, model) with their surrounding whitespace removed; blank is refused.
Name = Annotated[str, StringConstraints(strip_whitespace=True, min_length=1)]


def given_here(model: BaseModel, info: ValidationInfo) -> set[str]:
    """The fields the caller set, for a check across settings to blame: the validation
    context's ``given`` (session overrides: the keys the session sets), else the
    fields set explicitly (the environment, a keyword)."""
    context: Any = info.context
    if isinstance(context, dict) and "given" in context:
        return set(context["given"])
    return set(model.model_fields_set)


def must_be_below(low: str, high: str, *, model: BaseModel, given: Collection[str],
                  why: str = "") -> str:
    """The error for ``low`` >= ``high``, led by the setting to change: the one that
    was set (``high`` when only it was), each as ``field (RECAP_FIELD, value)``."""
    def named(field: str) -> str:
        return f"{field} (RECAP_{field.upper()}, {getattr(model, field)})"

    if high in given and low not in given:
        text = f"{named(high)} must be above {named(low)}"
    else:
        text = f"{named(low)} must be below {named(high)}"
    return f"{text}: {why}" if why else text
