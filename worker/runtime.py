"""Per-process resources: the summarizer and memory extractor (one SDK client), built once."""

from __future__ import annotations

import dataclasses
import functools

from worker.errors import ConfigError
from worker.memories import ClaudeExtractor, OfflineExtractor
from worker.prompt import load_template
from worker.settings import Settings, get_settings
from worker.summarizer import ClaudeSummarizer, OfflineSummarizer, Summarizer
from worker.tokens import count_tokens, split_by_tokens

Extractor = ClaudeExtractor | OfflineExtractor


def build_summarizer(settings: Settings) -> Summarizer:
    """The configured summarizer; ConfigError if it may not or cannot be used."""
    template = load_template(settings.prompt_file, settings.prompt)
    if settings.summarizer_kind == "offline":
        if settings.env == "production" and not settings.allow_offline_summarizer:
            raise ConfigError(
                "the offline extractive summarizer is not Claude and is refused when "
                "RECAP_ENV=production: set ANTHROPIC_API_KEY, or set "
                "RECAP_ALLOW_OFFLINE_SUMMARIZER=true to use it anyway")
        return OfflineSummarizer()
    if settings.anthropic_api_key is None:
        raise ConfigError("RECAP_SUMMARIZER=claude needs ANTHROPIC_API_KEY")
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
    return ClaudeSummarizer(
        client=client, model=settings.model, max_tokens=settings.max_summary_tokens,
        template=template, max_input_tokens=settings.llm_max_input_tokens,
        count=count_tokens, split=split_by_tokens, timeout_s=settings.llm_timeout_s)


@functools.cache
def get_summarizer() -> Summarizer:
    return build_summarizer(get_settings())


def summarizer_for(settings: Settings) -> Summarizer:
    """The process's summarizer, re-tuned for one session's effective settings."""
    base = get_summarizer()
    if not isinstance(base, ClaudeSummarizer):
        return base
    if (base.model, base.max_tokens, settings.prompt) == (
            settings.model, settings.max_summary_tokens, get_settings().prompt):
        return base
    return dataclasses.replace(base, model=settings.model,
                               max_tokens=settings.max_summary_tokens,
                               template=load_template(settings.prompt_file, settings.prompt))


def extractor_for(settings: Settings) -> Extractor:
    """The memory extractor sharing the summarizer's client and the session's model."""
    base = get_summarizer()
    if not isinstance(base, ClaudeSummarizer):
        return OfflineExtractor()
    return ClaudeExtractor(client=base.client, model=settings.model,
                           max_input_tokens=settings.llm_max_input_tokens, count=count_tokens,
                           split=split_by_tokens, timeout_s=settings.llm_timeout_s)


def reset() -> None:
    """Forget per-process resources (tests that change settings; after fork)."""
    get_summarizer.cache_clear()
