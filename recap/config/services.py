"""Where Recap's services are: the database, the broker, Claude's API, tracing."""

from __future__ import annotations

from typing import Literal

from pydantic import AliasChoices, BaseModel, Field, SecretStr, field_validator

from recap.config.base import (
    DEFAULT_BROKER_URL,
    DEFAULT_DATABASE_URL,
    MAX_SECONDS,
    MAX_URL_CHARS,
    Name,
)

# The longest list of keys or host names a setting may hold.
MAX_LIST_CHARS = 10_000

# The Messages API's address when ANTHROPIC_BASE_URL is unset (the SDK's own default).
ANTHROPIC_API_URL = "https://api.anthropic.com"

# Read as-is, without the RECAP_ prefix: the names every tool already uses.
STANDARD = {"database_url": "DATABASE_URL", "celery_broker_url": "CELERY_BROKER_URL",
            "anthropic_api_key": "ANTHROPIC_API_KEY",
            "anthropic_base_url": "ANTHROPIC_BASE_URL"}


class Services(BaseModel):
    """Services and wiring.

    The standard names (DATABASE_URL, CELERY_BROKER_URL, ANTHROPIC_API_KEY,
    ANTHROPIC_BASE_URL) are read as they are; RECAP_ENV=production refuses the
    embedded SQLite defaults.
    """

    env: Literal["development", "test", "production"] = Field("development", description=(
        "production refuses the SQLite defaults and, unless allowed, the offline summarizer."))
    database_url: str = Field(DEFAULT_DATABASE_URL, validation_alias=AliasChoices("DATABASE_URL"),
                              max_length=MAX_URL_CHARS,
                              description="SQLAlchemy URL of the database (PostgreSQL or "
                                          "SQLite); unset: an embedded SQLite file in the "
                                          "data directory (<data dir>: $XDG_DATA_HOME/recap, "
                                          "~/.local/share/recap by default), created and "
                                          "migrated on first use.")
    celery_broker_url: str = Field(DEFAULT_BROKER_URL,
                                   validation_alias=AliasChoices("CELERY_BROKER_URL"),
                                   max_length=MAX_URL_CHARS,
                                   description="Celery broker: redis://, amqp:// or sqla+sqlite://.")
    anthropic_api_key: SecretStr | None = Field(
        None, validation_alias=AliasChoices("ANTHROPIC_API_KEY"), max_length=1000,
        description="Claude API key; without it the worker refuses to start (unless offline).")
    anthropic_base_url: str | None = Field(
        None, validation_alias=AliasChoices("ANTHROPIC_BASE_URL"), max_length=MAX_URL_CHARS,
        description="Another Messages API endpoint (a gateway, a proxy, a test double).")
    queue: Name = Field("recap", max_length=200, description=(
        "Queue the jobs go to; every worker, beat and enqueuer must agree."))
    # SQLAlchemy pool per process (PostgreSQL). A job holds one connection at a
    # time; size it to the worker's concurrency (threads pool) plus one.
    db_pool_size: int = Field(5, ge=1, le=500, description=(
        "SQLAlchemy connection pool per process (PostgreSQL): a worker's threads + 1."))
    db_max_overflow: int = Field(10, ge=0, le=500, description=(
        "Connections a process may open above the pool under a burst."))
    otel_enabled: bool = Field(False, description=(
        "OpenTelemetry spans for jobs and Claude calls (needs the otel extra)."))

    @field_validator("anthropic_api_key", mode="before")
    @classmethod
    def _empty_is_unset(cls, value: object) -> object:
        # Compose passes ${VAR:-} as an empty string: treat it (or blanks) as not set.
        return None if isinstance(value, str) and not value.strip() else value

    @field_validator("anthropic_base_url", mode="before")
    @classmethod
    def _empty_is_the_default(cls, value: object) -> object:
        # A blank one (compose's ${VAR:-}) means unset. Given no base_url, the SDK reads
        # ANTHROPIC_BASE_URL itself and would take "" as the URL, so the address it
        # uses when the variable is unset is spelled out here.
        return ANTHROPIC_API_URL if isinstance(value, str) and not value.strip() else value

    @field_validator("anthropic_base_url")
    @classmethod
    def _an_http_url(cls, value: str | None) -> str | None:
        if value is not None and not value.strip().lower().startswith(("http://", "https://")):
            raise ValueError("expected an http:// or https:// URL, or leave it unset")
        return value.strip() if value is not None else None


class HttpApi(BaseModel):
    """The HTTP API.

    `recap serve` (recap.http): who may call it and what it accepts.
    """

    # Comma-separated so a new key can go in before the old one goes out.
    # A key may name a tenant (KEY:TENANT): it then reaches only ids under TENANT/.
    api_keys: SecretStr = Field(SecretStr(""), max_length=MAX_LIST_CHARS, description=(
        "Bearer keys of recap serve, comma-separated, each KEY or KEY:TENANT (docs/SECURITY.md); "
        "the server refuses to start without one."))
    # DNS rebinding: a page on another site whose name resolves to this server sends
    # its own Host. Empty: any Host with a key, the loopback names with --no-auth.
    api_allowed_hosts: str = Field("", max_length=MAX_LIST_CHARS, description=(
        "Host names recap serve answers, comma-separated (*.example.com: its subdomains); "
        "empty: any with keys, loopback names only with --no-auth."))
    # Above the largest inline image a message may carry (RECAP_MAX_INLINE_BASE64_CHARS).
    api_max_body_bytes: int = Field(8 * 1024 * 1024, ge=1024, le=256 * 1024 * 1024,
                                    description=(
        "Largest request body in bytes; bigger ones get 413 before they are parsed."))
    # A day, as Stripe keeps its keys: longer than any client's retry loop.
    api_idempotency_ttl_s: int = Field(86400, ge=60, le=MAX_SECONDS, description=(
        "Seconds an Idempotency-Key's first answer is kept for retries."))
