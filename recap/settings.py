"""One validated Settings object: every setting of Recap, joined from the groups in
recap/config (policy, services, Claude calls, retention, replies, timing, sweeper).

Standard names (DATABASE_URL, CELERY_BROKER_URL, ANTHROPIC_API_KEY,
ANTHROPIC_BASE_URL) are read as-is; everything else has the RECAP_ prefix.
docs/SETTINGS.md lists them all.
"""

from __future__ import annotations

import difflib
import logging
import math
import os
from collections.abc import Mapping
from typing import Any, Literal

from pydantic import ValidationError, model_validator
from pydantic_settings import BaseSettings, SettingsConfigDict

from recap.config.base import (
    DEFAULT_BROKER_URL,
    DEFAULT_DATABASE_URL,
    DEFAULT_MODEL,
    MAX_SECONDS,
    MODEL_MAX_CHARS,
    Name,
)
from recap.config.features import Calls, Replies, Retention
from recap.config.policy_fit import ignored_by, refusal
from recap.config.prices import PriceList, warn_unknown
from recap.config.services import STANDARD, HttpApi, Services
from recap.config.timing import Sweeper, Timing
from recap.config.tuning import TUNABLE, Tuning
from recap.core.planning.adaptive import BULK_TOKENS as ADAPTIVE_BULK_TOKENS
from recap.core.planning.adaptive import MIN_DEPTH as ADAPTIVE_MIN_DEPTH
from recap.core.planning.adaptive import RECALL_COVER as ADAPTIVE_RECALL_COVER
from recap.core.planning.policy import Thresholds
from recap.core.planning.prices import Prices, prices_for
from recap.errors import ConfigError, InvalidInput

__all__ = ["DEFAULT_BROKER_URL", "DEFAULT_DATABASE_URL", "DEFAULT_MODEL", "MAX_SECONDS",
           "MODEL_MAX_CHARS", "TUNABLE", "Name", "Settings", "Tuning", "check_policy_fit",
           "effective", "env_name", "get_settings", "load_settings", "unknown_variables",
           "use_settings", "validate_overrides"]

log = logging.getLogger("recap.settings")

# RECAP_* variables that are not settings: the deployment files' own
# (docker-compose.yml, the Procfile, the Dockerfile's build argument), beat's
# schedule folder (recap.paths) and what `recap serve` hands its workers.
NOT_SETTINGS = frozenset({"RECAP_WORKER_CONCURRENCY", "RECAP_API_WORKERS",
                          "RECAP_API_HOST_PORT", "RECAP_EXTRAS", "RECAP_BEAT_DIR",
                          "RECAP_SERVE_NO_AUTH"})
# The test suite's and the benchmarks' variables (docs/TESTING.md, docs/benchmarks/setup.md).
HARNESS_PREFIXES = ("RECAP_TEST_", "RECAP_BENCH_", "RECAP_SOAK_")


class Settings(BaseSettings, Tuning, Services, Calls, Retention, Replies, Timing, Sweeper,
               HttpApi, PriceList):
    """Every setting, read from the environment and validated once at the edge."""

    model_config = SettingsConfigDict(env_prefix="RECAP_", extra="ignore",
                                      populate_by_name=True, allow_inf_nan=False)

    @model_validator(mode="after")
    def _check_consistency(self) -> Settings:
        if self.llm_max_input_tokens < 2 * self.max_summary_tokens:
            raise ValueError(self._summary_room())
        if self.policy == "adaptive" and self.job_token_budget() < ADAPTIVE_MIN_DEPTH:
            raise ValueError(self._short_jobs())
        if self.env == "production":
            if self.database_url == DEFAULT_DATABASE_URL:
                raise ValueError("DATABASE_URL must be set when RECAP_ENV=production")
            if self.celery_broker_url == DEFAULT_BROKER_URL:
                raise ValueError("CELERY_BROKER_URL must be set when RECAP_ENV=production")
        return self

    @model_validator(mode="after")
    def _policy_reads_every_setting(self) -> Settings:
        # Only what was set explicitly (the environment, a .env file, a keyword):
        # the defaults of the fixed rule are harmless under the adaptive policy.
        ignored = ignored_by(self.policy, self.model_fields_set)
        if ignored:
            raise ValueError(refusal(ignored, name=env_name, policy_name="RECAP_POLICY"))
        return self

    def thresholds(self) -> Thresholds:
        """The policy's thresholds under these settings."""
        return Thresholds(
            trigger_messages=self.trigger_messages, trigger_tokens=self.trigger_tokens,
            batch_size=self.batch_size, keep_recent=self.keep_recent,
            context_budget_tokens=self.context_budget_tokens,
            max_batch_tokens=self.job_token_budget(), condense_to=self.condense_to,
            adaptive=self.policy == "adaptive", memory_limit=self.memory_budget_tokens,
            recall_cover=(ADAPTIVE_RECALL_COVER if self.archive_summarized
                          and self.recall_tokens > 0 else 0.0),
            prices=self.prices_of())

    def prices_of(self) -> Prices:
        """The reply model's (RECAP_REPLY_MODEL) and the summarizer's (RECAP_MODEL)
        prices from the table (RECAP_PRICES over the published one); a model without
        a row of its own is logged once and priced by its family's."""
        table = self.price_table()
        for model in (self.reply_model, self.model):
            warn_unknown(model, table)
        return prices_for(self.reply_model, self.model, ttl=self.cache_ttl, table=table)

    def bulk_excerpt_tokens(self) -> int:
        """RECAP_SUMMARIZE_BULK_TOKENS, or the policy's own when it is -1: the adaptive
        policy sends the summarizer excerpts of pasted blocks over its BULK_TOKENS
        (the guard reads every stored line, so what the excerpt leaves out goes to the
        details section or the memories); the fixed rule sends them whole."""
        if self.summarize_bulk_tokens >= 0:
            return self.summarize_bulk_tokens
        return ADAPTIVE_BULK_TOKENS if self.policy == "adaptive" else 0

    def thresholds_key(self) -> str:
        """The thresholds as a short string, stored with normal_blocked (see models)."""
        t = self.thresholds()
        return (f"{t.trigger_messages}:{t.trigger_tokens}:{t.batch_size}:{t.keep_recent}:"
                f"{t.context_budget_tokens}:{t.max_batch_tokens}"
                + (":adaptive" if t.adaptive else ""))

    def job_token_budget(self) -> int:
        """Most tokens one job condenses, so it always ends within its soft time limit.

        As many requests as fit the limit even if each call (summary and memory
        mining alike) ran to RECAP_LLM_TIMEOUT_S, and at most two full requests:
        a backlog drains over follow-up jobs instead of one job running past its
        limit and failing on every attempt.
        """
        room = max(500, self.llm_max_input_tokens - 3 * self.max_summary_tokens - 500)
        return min(2 * self.llm_max_input_tokens, self.calls_per_job() * room)

    def calls_per_job(self) -> int:
        """Model calls that fit one job even if each ran to RECAP_LLM_TIMEOUT_S: a job
        plans its requests (summary, memory mining, repair) within them
        (recap.worker.jobs.sizing)."""
        return max(1, int(self.task_soft_time_limit_s // (2 * self.llm_timeout_s)))

    def _summary_room(self) -> str:
        """Why the requests are too small for the summary, led by the setting that was set."""
        why = "every request carries the summary so far and room for the new one"
        if ("max_summary_tokens" in self.model_fields_set
                and "llm_max_input_tokens" not in self.model_fields_set):
            return (f"RECAP_MAX_SUMMARY_TOKENS ({self.max_summary_tokens}) must be at most "
                    f"half RECAP_LLM_MAX_INPUT_TOKENS ({self.llm_max_input_tokens}): {why}")
        return (f"RECAP_LLM_MAX_INPUT_TOKENS ({self.llm_max_input_tokens}) must be at least "
                f"twice RECAP_MAX_SUMMARY_TOKENS ({self.max_summary_tokens}): {why}")

    def _short_jobs(self) -> str:
        """Why these limits contradict the adaptive policy: one job condenses less than
        its smallest fold, so every fold stops short of the plan."""
        calls = self.calls_per_job()
        need = 3 * self.max_summary_tokens + 500 + math.ceil(ADAPTIVE_MIN_DEPTH / calls)
        return (f"RECAP_LLM_MAX_INPUT_TOKENS ({self.llm_max_input_tokens}) with "
                f"RECAP_MAX_SUMMARY_TOKENS ({self.max_summary_tokens}) lets one job condense "
                f"at most {self.job_token_budget()} tokens ({calls} call(s) in "
                f"RECAP_TASK_SOFT_TIME_LIMIT_S={self.task_soft_time_limit_s} at "
                f"RECAP_LLM_TIMEOUT_S={self.llm_timeout_s:g} each), below the smallest fold "
                f"of RECAP_POLICY=adaptive ({ADAPTIVE_MIN_DEPTH} tokens): every fold would "
                f"stop short of its plan. Raise RECAP_LLM_MAX_INPUT_TOKENS to at least {need}, "
                "lower RECAP_MAX_SUMMARY_TOKENS, give each job time for more calls, or set "
                "RECAP_POLICY=threshold")

    @property
    def summarizer_kind(self) -> Literal["claude", "offline"]:
        """Claude unless RECAP_SUMMARIZER=offline says otherwise: never by default."""
        return self.summarizer


def env_name(field: str) -> str:
    """The environment variable that sets ``field`` (a standard name is its own)."""
    if field in STANDARD.values():
        return field
    return STANDARD.get(field, "RECAP_" + field.upper())


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


def unknown_variables(environ: Mapping[str, str]) -> list[str]:
    """One line per RECAP_* variable of ``environ`` that no setting reads (a typo is
    otherwise silently ignored), naming the closest valid one."""
    known = {env_name(field) for field in Settings.model_fields} | NOT_SETTINGS
    # Compared without the shared prefix, which would make every name look alike.
    stems = {name.removeprefix("RECAP_"): name for name in sorted(known)}
    lines = []
    for name in sorted(environ):
        upper = name.upper()  # the settings are read case-insensitively
        if (not upper.startswith("RECAP_") or upper in known
                or upper.startswith(HARNESS_PREFIXES)):
            continue
        close = difflib.get_close_matches(upper.removeprefix("RECAP_"), list(stems), n=1)
        hint = (f": did you mean {stems[close[0]]}?" if close
                else "; docs/SETTINGS.md lists the settings")
        lines.append(f"{name} is not a Recap setting and is ignored{hint}")
    return lines


def load_settings(**overrides: object) -> Settings:
    """Read and validate settings; raise ConfigError naming each bad variable. Warns
    (logger ``recap.settings``) of each RECAP_* variable no setting reads."""
    for line in unknown_variables(os.environ):
        log.warning(line)
    try:
        return Settings(**overrides)  # type: ignore[arg-type]
    except ValidationError as exc:
        problems = []
        for err in exc.errors():
            field = str(err["loc"][0]) if err["loc"] else ""
            if not field:  # a check across settings: its message names them
                problems.append(str(err["msg"]).removeprefix("Value error, "))
                continue
            got = "" if field == "anthropic_api_key" else f" (got {err.get('input')!r})"
            message = str(err["msg"]).removeprefix("Value error, ")
            problems.append(f"{env_name(field)}: {message}{got}{_valid_range(field)}")
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
        tuned = Tuning.model_validate({**base.model_dump(include=set(TUNABLE)), **raw},
                                      context={"given": set(raw)})
    except ValidationError as exc:
        problems = [_override_problem(e) for e in exc.errors()]
        raise InvalidInput("invalid session settings: " + "; ".join(problems)) from None
    if 2 * tuned.max_summary_tokens > base.llm_max_input_tokens:
        raise InvalidInput(f"invalid session settings: max_summary_tokens "
                           f"{tuned.max_summary_tokens} needs requests of twice that, above "
                           f"RECAP_LLM_MAX_INPUT_TOKENS ({base.llm_max_input_tokens})")
    return {k: getattr(tuned, k) for k in raw}


def _override_problem(error: Any) -> str:
    """One line of a refused override: the key and what is wrong (a check across keys
    names its keys itself)."""
    message = str(error["msg"]).removeprefix("Value error, ")
    if not error["loc"]:
        return message
    return (f"{'.'.join(map(str, error['loc']))}: {message}"
            f"{_valid_range(str(error['loc'][0]))}")


def check_policy_fit(overrides: dict[str, object], *, base: Settings) -> None:
    """Refuse session overrides the session's policy would ignore (InvalidInput naming
    the policy and the way out): ``trigger_messages=40`` under the adaptive policy
    would otherwise be stored and never read."""
    policy = str(overrides.get("policy", base.policy))
    ignored = ignored_by(policy, overrides)
    if ignored:
        raise InvalidInput("invalid session settings: " + refusal(
            ignored, name=str, policy_name="policy"))


def effective(settings: Settings, overrides: dict[str, object] | None) -> Settings:
    """``settings`` with one session's overrides applied (validated again)."""
    if not overrides:
        return settings
    return settings.model_copy(update=validate_overrides(overrides, base=settings))


class _Process:
    """The settings of this process: installed by an edge, or read once on first use."""

    settings: Settings | None = None


def get_settings() -> Settings:
    """The process's settings: those an edge installed (:func:`use_settings`), else the
    environment's, read and validated once."""
    if _Process.settings is None:
        _Process.settings = load_settings()
    return _Process.settings


def use_settings(settings: Settings | None) -> None:
    """Make ``settings`` the process's, for an edge that builds its own (the demo's
    files, recap eval's stand-in) instead of writing os.environ; None forgets them,
    so the next :func:`get_settings` reads the environment again. The database is
    handed down apart (:func:`recap.db.use_database`)."""
    _Process.settings = settings
