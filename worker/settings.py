"""One validated Settings object; every tunable of Recap lives here.

Standard names (DATABASE_URL, CELERY_BROKER_URL, ANTHROPIC_API_KEY,
ANTHROPIC_BASE_URL) are read as-is; everything else has the RECAP_ prefix.
"""

from __future__ import annotations

import functools
from pathlib import Path
from typing import Annotated, Literal

from pydantic import (
    AliasChoices,
    BaseModel,
    Field,
    SecretStr,
    StringConstraints,
    ValidationError,
    field_validator,
    model_validator,
)
from pydantic_settings import BaseSettings, SettingsConfigDict

from worker.core.policy import Thresholds
from worker.errors import ConfigError, InvalidInput
from worker.paths import default_broker_path, default_database_path

# The embedded default: one SQLite file for data and one for the broker, so
# `recap demo` and a first `celery -A worker worker` need no services at all.
# RECAP_ENV=production refuses to start on these defaults.
# Both live in the user's data directory (worker/paths.py), never the current one.
DEFAULT_DATABASE_URL = f"sqlite:///{default_database_path()}"
DEFAULT_BROKER_URL = f"sqla+sqlite:///{default_broker_path()}"

# A current Haiku-class model from the installed SDK's model list: summaries are
# a high-volume, low-difficulty job, so the cheapest fast tier fits.
DEFAULT_MODEL = "claude-haiku-5-5"


def _std(name: str) -> AliasChoices:
    return AliasChoices(name)


# summary_runs.model is VARCHAR(100): a longer id (a Bedrock or Vertex ARN, say)
# would fail every apply and every failure record, so it is refused up front.
MODEL_MAX_CHARS = 100
# The longest any time setting may be: beyond it, datetime arithmetic overflows
# (1e12 s) long before the setting means anything.
MAX_SECONDS = 30 * 24 * 3600
# Names (queue, model) with their surrounding whitespace removed; blank is refused.
Name = Annotated[str, StringConstraints(strip_whitespace=True, min_length=1)]


class Tuning(BaseModel):
    """What a deployment (RECAP_* variables) or one session (chat_sessions.overrides)
    may tune. Both are validated by this model, with the same limits."""

    # Policy thresholds (see worker/policy.py for how they combine).
    trigger_messages: int = Field(30, ge=1)
    trigger_tokens: int = Field(15000, ge=1)
    batch_size: int = Field(20, ge=1, le=10000)
    # At least 1: the newest message is never condensed, so an assistant turn is
    # never summarized before the tool results that answer it have arrived.
    keep_recent: int = Field(10, ge=1)
    max_summary_tokens: int = Field(1024, ge=64, le=16384)
    context_budget_tokens: int = Field(32000, ge=1000)
    # Cache-aware folding: a fold condenses until summary + the rest fit this share
    # of the budget (worker/core/policy.py), so the summary (the start of every
    # prompt, hence Claude's prompt cache) changes less often. 0: the batch only.
    # Below the 80% at which the capacity rule fires.
    condense_to: float = Field(0.0, ge=0.0, le=0.75)
    model: Name = Field(DEFAULT_MODEL, max_length=MODEL_MAX_CHARS)
    prompt: Literal["default", "es"] = "default"

    @model_validator(mode="after")
    def _summary_fits_budget(self) -> Tuning:
        if self.max_summary_tokens >= self.context_budget_tokens:
            raise ValueError("max_summary_tokens (RECAP_MAX_SUMMARY_TOKENS) must be below "
                             "context_budget_tokens (RECAP_CONTEXT_BUDGET_TOKENS)")
        if self.keep_recent >= self.trigger_messages:
            raise ValueError(f"keep_recent (RECAP_KEEP_RECENT, {self.keep_recent}) must be below "
                             f"trigger_messages (RECAP_TRIGGER_MESSAGES, "
                             f"{self.trigger_messages}): otherwise the hook queues a job on "
                             "every reply that can only be skipped")
        return self


TUNABLE = tuple(Tuning.model_fields)


class Settings(BaseSettings, Tuning):
    model_config = SettingsConfigDict(env_prefix="RECAP_", extra="ignore",
                                      populate_by_name=True, allow_inf_nan=False)

    env: Literal["development", "test", "production"] = "development"

    database_url: str = Field(DEFAULT_DATABASE_URL, validation_alias=_std("DATABASE_URL"))
    celery_broker_url: str = Field(DEFAULT_BROKER_URL,
                                   validation_alias=_std("CELERY_BROKER_URL"))
    anthropic_api_key: SecretStr | None = Field(None,
                                                validation_alias=_std("ANTHROPIC_API_KEY"))
    anthropic_base_url: str | None = Field(None, validation_alias=_std("ANTHROPIC_BASE_URL"))

    # SQLAlchemy pool per process (PostgreSQL). A job holds one connection at a
    # time; size it to the worker's concurrency (threads pool) plus one.
    db_pool_size: int = Field(5, ge=1, le=500)
    db_max_overflow: int = Field(10, ge=0, le=500)

    # What happens to condensed messages, and what else a job does with them.
    archive_summarized: bool = False
    extract_memories: bool = True
    # Tokens of the <MEMORIES> block in build_context, inside the context budget:
    # about 6% of the default 32,000. Chosen per summary version, the block is read
    # from the prompt cache at 0.1x, and it carries the specifics the window no
    # longer holds: with 2,000 the defaults keep the most of every swept setting on
    # both benchmark conversations (bench/cost.py; 1,000 kept less than a 16k budget
    # with 2,000). The block only shrinks when the context is above 94% of the
    # budget, where the policy is already condensing. 0 turns the block off.
    memory_budget_tokens: int = Field(2000, ge=0, le=100_000)
    # Which memories the block shows, and where (worker/core/assemble.py):
    # "version": chosen once per summary version (relevance to the summary), so with
    # prompt caching the block sits in the cached prefix and costs 0.1x per reply;
    # "reply": ranked by the newest user turn on every reply, so with caching it rides
    # after the last breakpoint at 1x. Chosen by measurement (bench/cost.py).
    memories_per: Literal["version", "reply"] = "version"
    # With "version": up to this many of the block's tokens (at most half) go to the
    # memories most relevant to the newest user turn that the cached block does not
    # show, sent after the last breakpoint (1x per reply), so a question about an
    # old fact still reaches it. 0: the cached block only.
    memory_reply_tokens: int = Field(200, ge=0, le=100_000)
    # The retention guard (worker/core/guard.py): no message is deleted before its
    # specifics are in the summary or the memories. Off only to measure without it.
    retention_guard: bool = True
    # The guard's details section may take this share of max_summary_tokens; what
    # does not fit stays in the window or goes to memories.
    details_share: float = Field(0.25, ge=0.05, le=1.0)
    # Pasted blocks (logs, configs, tables, traces) above this many tokens are sent
    # to the summarizer as an excerpt (worker/core/bulk.py): the guard needs only
    # their first line and what the prose mentions. 0: off, everything is sent.
    summarize_bulk_tokens: int = Field(0, ge=0, le=100_000)
    # Queue a title job after a session's first exchange (worker/titles.py).
    titles_enabled: bool = True
    otel_enabled: bool = False
    # Inline (base64) image and document data one message may carry, in base64
    # characters: 5 MiB, the API's own per-image limit; the Messages API caps a
    # whole request at 32 MB. Larger files go by url or file id.
    max_inline_base64_chars: int = Field(5 * 1024 * 1024, ge=1024, le=32 * 1024 * 1024)
    # Summary versions kept per session (summary_versions: recap history,
    # worker.summary_at, rewind into summarized history): -1 all, 0 none, N the
    # newest N. Each is one summary's text, so all is cheap next to the archive.
    summary_versions_keep: int = Field(-1, ge=-1, le=1_000_000)
    # build_context marks the stable prefix and the last turn with cache_control
    # breakpoints: replies then pay 0.1x for the history Claude has cached.
    prompt_caching: bool = True

    # Claude calls. The SDK's own retries are off: Celery owns retrying, so a
    # job holds a worker slot for at most one request timeout per chunk.
    llm_timeout_s: float = Field(30.0, ge=0.1, le=600)
    # Input tokens one request may carry (batch + previous summary + prompt);
    # bigger batches are summarized in chunks. Below the model's 200k window.
    llm_max_input_tokens: int = Field(150_000, ge=2000, le=1_000_000)
    # "auto" means Claude, and refuses to start without ANTHROPIC_API_KEY: the
    # offline extractive stand-in loses most details of what it condenses, and
    # condensed rows are deleted, so using it must be an explicit choice.
    summarizer: Literal["auto", "claude", "offline"] = "auto"
    allow_offline_summarizer: bool = False
    prompt_file: Path | None = None

    # Retries (Celery): exponential backoff with full jitter, capped.
    max_retries: int = Field(5, ge=0, le=50)
    retry_backoff_s: float = Field(5.0, ge=0.01, le=MAX_SECONDS)
    retry_backoff_max_s: float = Field(300.0, ge=0.01, le=MAX_SECONDS)

    # Time limits and the lease. The lease must outlive the hard time limit, so
    # a live job never loses its lease; the broker's visibility timeout must
    # outlive the time limit plus the longest retry delay, or Redis redelivers
    # a message whose worker is still alive.
    task_soft_time_limit_s: int = Field(240, ge=5, le=MAX_SECONDS)
    task_time_limit_s: int = Field(300, ge=6, le=MAX_SECONDS)
    lease_s: int = Field(360, ge=2, le=MAX_SECONDS)
    visibility_timeout_s: int = Field(3600, ge=10, le=MAX_SECONDS)
    # After this many claims that found the previous holder's lease expired
    # (its worker died mid-job), the session is dead-lettered instead of run again.
    max_lost_leases: int = Field(3, ge=1, le=1000)

    # Coalescing and the sweeper.
    queue: Name = Field("recap", max_length=200)
    enqueue_stale_s: int = Field(900, ge=1, le=MAX_SECONDS)
    # Beat runs the sweep this often: at least a second, at most a day.
    sweep_interval_s: float = Field(300.0, ge=1, le=86400)
    sweep_batch: int = Field(500, ge=1, le=100_000)
    dead_cooldown_s: int = Field(3600, ge=0, le=MAX_SECONDS)


    @field_validator("anthropic_base_url", "anthropic_api_key", mode="before")
    @classmethod
    def _empty_is_unset(cls, value: object) -> object:
        # Compose passes ${VAR:-} as an empty string: treat it (or blanks) as not set.
        return None if isinstance(value, str) and not value.strip() else value

    @model_validator(mode="after")
    def _check_consistency(self) -> Settings:
        if self.task_time_limit_s <= self.task_soft_time_limit_s:
            raise ValueError("RECAP_TASK_TIME_LIMIT_S must be greater than "
                             "RECAP_TASK_SOFT_TIME_LIMIT_S")
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
        if self.llm_max_input_tokens < 2 * self.max_summary_tokens:
            raise ValueError(f"RECAP_LLM_MAX_INPUT_TOKENS ({self.llm_max_input_tokens}) must be "
                             f"at least twice RECAP_MAX_SUMMARY_TOKENS "
                             f"({self.max_summary_tokens}): every request carries the summary "
                             "so far and room for the new one")
        if self.env == "production":
            if self.database_url == DEFAULT_DATABASE_URL:
                raise ValueError("DATABASE_URL must be set when RECAP_ENV=production")
            if self.celery_broker_url == DEFAULT_BROKER_URL:
                raise ValueError("CELERY_BROKER_URL must be set when RECAP_ENV=production")
        return self

    def thresholds(self) -> Thresholds:
        """The policy's thresholds under these settings."""
        return Thresholds(
            trigger_messages=self.trigger_messages, trigger_tokens=self.trigger_tokens,
            batch_size=self.batch_size, keep_recent=self.keep_recent,
            context_budget_tokens=self.context_budget_tokens,
            max_batch_tokens=self.job_token_budget(), condense_to=self.condense_to)

    def thresholds_key(self) -> str:
        """The thresholds as a short string, stored with normal_blocked (see models)."""
        t = self.thresholds()
        return (f"{t.trigger_messages}:{t.trigger_tokens}:{t.batch_size}:{t.keep_recent}:"
                f"{t.context_budget_tokens}:{t.max_batch_tokens}")

    def job_token_budget(self) -> int:
        """Most tokens one job condenses, so it always ends within its soft time limit.

        As many requests as fit the limit even if each call (summary and memory
        mining alike) ran to RECAP_LLM_TIMEOUT_S, and at most two full requests:
        a backlog drains over follow-up jobs instead of one job running past its
        limit and failing on every attempt.
        """
        calls = max(1, int(self.task_soft_time_limit_s // (2 * self.llm_timeout_s)))
        room = max(500, self.llm_max_input_tokens - 3 * self.max_summary_tokens - 500)
        return min(2 * self.llm_max_input_tokens, calls * room)

    @property
    def summarizer_kind(self) -> Literal["claude", "offline"]:
        """Claude unless RECAP_SUMMARIZER=offline says otherwise: never by default."""
        return "offline" if self.summarizer == "offline" else "claude"


_STANDARD = {"database_url": "DATABASE_URL", "celery_broker_url": "CELERY_BROKER_URL",
             "anthropic_api_key": "ANTHROPIC_API_KEY",
             "anthropic_base_url": "ANTHROPIC_BASE_URL"}


def env_name(field: str) -> str:
    """The environment variable that sets ``field``."""
    return _STANDARD.get(field, "RECAP_" + field.upper())


def _valid_range(field: str) -> str:
    """`` (valid: 1 to 2592000)`` for a bounded numeric setting; "" for the others."""
    info = Settings.model_fields.get(field)
    bounds = {k: getattr(m, k) for m in (info.metadata if info else ())
              for k in ("ge", "gt", "le", "lt") if getattr(m, k, None) is not None}
    if "ge" in bounds and "le" in bounds:
        return f" (valid: {bounds['ge']} to {bounds['le']})"
    words = {"ge": "at least", "gt": "above", "le": "at most", "lt": "below"}
    parts = [f"{words[k]} {v}" for k, v in bounds.items()]
    return f" (valid: {' and '.join(parts)})" if parts else ""


def load_settings(**overrides: object) -> Settings:
    """Read and validate settings; raise ConfigError naming each bad variable."""
    try:
        return Settings(**overrides)  # type: ignore[arg-type]
    except ValidationError as exc:
        problems = []
        for err in exc.errors():
            field = str(err["loc"][0]) if err["loc"] else ""
            name = env_name(field) if field else "settings"
            got = "" if field == "anthropic_api_key" else f" (got {err.get('input')!r})"
            problems.append(f"{name}: {err['msg']}{got if field else ''}{_valid_range(field)}")
        raise ConfigError("invalid configuration: " + "; ".join(problems)) from None


def validate_overrides(raw: object, *, base: Settings) -> dict[str, object]:
    """Per-session overrides, checked with the same limits as the settings.

    Raises InvalidInput naming each unknown or bad key; returns the normalized dict.
    """
    if not isinstance(raw, dict):
        raise InvalidInput(f"session settings must be an object, got {type(raw).__name__}")
    unknown = sorted(set(raw) - set(TUNABLE))
    if unknown:
        raise InvalidInput(f"unknown session setting(s) {', '.join(unknown)}; "
                           f"allowed: {', '.join(TUNABLE)}")
    try:
        tuned = Tuning.model_validate({**base.model_dump(include=set(TUNABLE)), **raw})
    except ValidationError as exc:
        problems = [f"{'.'.join(map(str, e['loc'])) or 'settings'}: {e['msg']}"
                    for e in exc.errors()]
        raise InvalidInput("invalid session settings: " + "; ".join(problems)) from None
    if 2 * tuned.max_summary_tokens > base.llm_max_input_tokens:
        raise InvalidInput(f"invalid session settings: max_summary_tokens "
                           f"{tuned.max_summary_tokens} needs requests of twice that, above "
                           f"RECAP_LLM_MAX_INPUT_TOKENS ({base.llm_max_input_tokens})")
    return {k: getattr(tuned, k) for k in raw}


def effective(settings: Settings, overrides: dict[str, object] | None) -> Settings:
    """``settings`` with one session's overrides applied (validated again)."""
    if not overrides:
        return settings
    return settings.model_copy(update=validate_overrides(overrides, base=settings))


@functools.cache
def get_settings() -> Settings:
    """The process-wide settings, validated once."""
    return load_settings()
