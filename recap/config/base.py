"""Constants and types the setting groups share."""

from __future__ import annotations

from typing import Annotated

from pydantic import StringConstraints

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
