"""Per-process resources a job is handed (arq's ``ctx``): settings and one SDK client.

Built once per process by :func:`get_resources` (the worker builds them at
start-up, so a bad configuration fails the worker, not its first job) and
passed down; nothing below the job functions reads settings on its own.
:func:`reset_process_state` is the one place that forgets per-process state:
after fork, and in tests that change the environment.
"""

from __future__ import annotations

import dataclasses
import logging
from dataclasses import dataclass

from recap import db, tracing
from recap.core.tenant import tenant_of
from recap.core.text import redact
from recap.errors import ConfigError
from recap.llm import calibrate
from recap.llm.client import ClientConfig
from recap.llm.offline import OfflineSummarizer
from recap.llm.summarizer import ClaudeSummarizer, Summarizer
from recap.llm.templates import load_template
from recap.llm.tokens import count_tokens, split_by_tokens
from recap.settings import Settings, get_settings, use_settings
from recap.store.enqueue import BREAKER

log = logging.getLogger("recap.worker")


@dataclass(frozen=True)
class Resources:
    """What every job receives: the process settings, the summarizer, the client config."""

    settings: Settings
    summarizer: Summarizer
    client: ClientConfig | None = None  # None: offline, no network at all

    @property
    def secret(self) -> str | None:
        key = self.settings.anthropic_api_key
        return key.get_secret_value() if key else None

    def redact(self, text: str) -> str:
        """``text`` with the API key removed (for logs, events and audit rows)."""
        return redact(text, self.secret)

    def summarizer_for(self, tuned: Settings, *, session_id: str | None = None) -> Summarizer:
        """The summarizer re-tuned for one session's effective settings; with
        ``session_id``, its calls are that session's tenant's (recap.llm.calibrate
        learns and sizes per tenant)."""
        base = self.summarizer
        if not isinstance(base, ClaudeSummarizer):
            return base
        config = base.config.with_model(tuned.model).for_tenant(
            None if session_id is None else tenant_of(session_id))
        if (base.max_tokens, tuned.prompt, tuned.prompt_file, base.plain,
                base.max_resends, base.max_facts_tokens) == (
                tuned.max_summary_tokens, self.settings.prompt,
                self.settings.prompt_file, tuned.summary_mode == "plain",
                tuned.max_resends, tuned.max_facts_tokens):
            return base if config is base.config else dataclasses.replace(base, config=config)
        return dataclasses.replace(base, config=config,
                                   max_tokens=tuned.max_summary_tokens,
                                   template=load_template(tuned.prompt_file, tuned.prompt),
                                   plain=tuned.summary_mode == "plain",
                                   max_resends=tuned.max_resends,
                                   max_facts_tokens=tuned.max_facts_tokens)

    def model_for(self, tuned: Settings) -> str:
        """The model :meth:`summarizer_for` ``tuned`` calls, known without building
        it (the claim reads that model's recent repairs in its transaction)."""
        if isinstance(self.summarizer, ClaudeSummarizer):
            return tuned.model
        return self.summarizer.model

    def with_summarizer(self, summarizer: Summarizer) -> Resources:
        """These resources with ``summarizer``; the client is the summarizer's own
        (None unless it is Claude's), so titles and memories follow it offline."""
        client = summarizer.config if isinstance(summarizer, ClaudeSummarizer) else None
        return dataclasses.replace(self, summarizer=summarizer, client=client)


def build_resources(settings: Settings) -> Resources:
    """The configured summarizer and client; ConfigError if they may not or cannot be used."""
    tracing.configure(enabled=settings.otel_enabled)
    db.use_database(db.DatabaseOptions.of(settings))  # handed down, not read again
    template = load_template(settings.prompt_file, settings.prompt)
    if settings.summarizer_kind == "offline":
        if settings.env == "production" and not settings.allow_offline_summarizer:
            raise ConfigError(
                "the offline extractive summarizer is not Claude and is refused when "
                "RECAP_ENV=production: set ANTHROPIC_API_KEY, or set "
                "RECAP_ALLOW_OFFLINE_SUMMARIZER=true to use it anyway")
        log.warning("RECAP_SUMMARIZER=offline: summaries come from the offline extractive "
                    "stand-in, not Claude; it keeps little of what it condenses, and "
                    "condensed messages are deleted")
        return Resources(settings, OfflineSummarizer())
    if settings.anthropic_api_key is None:
        raise ConfigError(
            "ANTHROPIC_API_KEY is not set: Recap summarizes with Claude and deletes what it "
            "condensed, so it will not start without a key. Set ANTHROPIC_API_KEY, or set "
            "RECAP_SUMMARIZER=offline to choose the lossy offline extractive summarizer")
    import anthropic

    client = anthropic.Anthropic(
        api_key=settings.anthropic_api_key.get_secret_value(),
        base_url=settings.anthropic_base_url,
        # Celery owns retries (with backoff, releasing the worker slot between
        # attempts); SDK retries would hold the slot and the lease meanwhile.
        max_retries=0,
        timeout=settings.llm_timeout_s,
        # The SDK traces on its own whenever a global provider exists; "off"
        # (RECAP_OTEL_ENABLED=false) means off.
        open_telemetry=None if settings.otel_enabled else False)
    config = ClientConfig(client=client, model=settings.model, timeout_s=settings.llm_timeout_s,
                          max_input_tokens=settings.llm_max_input_tokens, count=count_tokens,
                          split=split_by_tokens, calibrate=settings.llm_calibrate_tokens)
    return Resources(settings, ClaudeSummarizer(config, max_tokens=settings.max_summary_tokens,
                                                template=template,
                                                plain=settings.summary_mode == "plain",
                                                max_resends=settings.max_resends,
                                                max_facts_tokens=settings.max_facts_tokens),
                     config)


_CURRENT: list[Resources] = []


def get_resources() -> Resources:
    """This process's resources, built on first use from the process settings."""
    if not _CURRENT:
        _CURRENT.append(build_resources(get_settings()))
    return _CURRENT[0]


def reset_process_state(*, close: bool = True) -> None:
    """Forget settings, engines, resources and a paused publisher; after fork pass
    ``close=False`` (the parent still owns the sockets)."""
    use_settings(None)
    db.reset_engines(close=close)
    _CURRENT.clear()
    calibrate.forget()
    BREAKER.reset()
    tracing.configure(enabled=False)  # until the process settings say otherwise
