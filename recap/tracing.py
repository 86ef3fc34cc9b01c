"""Optional OpenTelemetry tracing: job spans, GenAI spans for Claude calls, Celery propagation.

Off by default (RECAP_OTEL_ENABLED, applied by the entry points through
:func:`configure`). When off, nothing here imports
``opentelemetry``: ``span`` and ``llm_span`` are plain no-op context managers.
When on, spans go to the global tracer provider; ``configure_provider`` installs
an OTLP exporter unless the process already set one up (``opentelemetry-instrument``,
or the chat app's own setup). Needs the ``otel`` extra: ``pip install 'recap-worker[otel]'``.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

log = logging.getLogger("recap.tracing")

TRACER_NAME = "recap"
# The GenAI semantic conventions' operation names for Recap's Claude calls.
LLM_OPERATIONS = frozenset({"summarize", "extract_memory", "repair_summary", "generate_title",
                            "check_model"})
_ATTRIBUTE_TYPES = (str, bool, int, float)


# Set once per process by configure() from the process settings (RECAP_OTEL_ENABLED):
# when the Celery app is configured, and when a worker builds its resources.
_STATE = {"enabled": False}


def configure(*, enabled: bool) -> None:
    """Turn tracing on or off for this process (its entry points call this)."""
    _STATE["enabled"] = enabled


def enabled() -> bool:
    """Whether tracing is on in this process."""
    return _STATE["enabled"]


class _NoSpan:
    """What ``span``/``llm_span`` yield when tracing is off: accepts and drops everything."""

    def set_attribute(self, key: str, value: object) -> None:
        pass

    def record_usage(self, input_tokens: int | None, output_tokens: int | None) -> None:
        pass


_NO_SPAN = _NoSpan()


def _attribute(value: object) -> Any:
    # OTel accepts only str/bool/int/float (and sequences of them); anything
    # else would be dropped with a warning, so record its text instead.
    return value if isinstance(value, _ATTRIBUTE_TYPES) else str(value)


class _Span:
    """A thin wrapper over an OTel span: attribute coercion and GenAI usage recording."""

    def __init__(self, span: Any) -> None:
        self.span = span

    def set_attribute(self, key: str, value: object) -> None:
        if value is not None:
            self.span.set_attribute(key, _attribute(value))

    def record_usage(self, input_tokens: int | None, output_tokens: int | None) -> None:
        self.set_attribute("gen_ai.usage.input_tokens", input_tokens)
        self.set_attribute("gen_ai.usage.output_tokens", output_tokens)


@contextmanager
def span(name: str, **attributes: object) -> Iterator[_Span | _NoSpan]:
    """A span named ``name`` around the block (None-valued attributes are left out).

    A no-op yielding an object with the same methods when tracing is off. An
    exception leaving the block is recorded on the span and re-raised.
    """
    if not enabled():
        yield _NO_SPAN
        return
    from opentelemetry import trace

    attrs = {k: _attribute(v) for k, v in attributes.items() if v is not None}
    with trace.get_tracer(TRACER_NAME).start_as_current_span(name, attributes=attrs) as s:
        wrapped = _Span(s)
        try:
            yield wrapped
        except BaseException as exc:
            wrapped.set_attribute("error.type", type(exc).__name__)
            raise


@contextmanager
def llm_span(operation: str, model: str) -> Iterator[_Span | _NoSpan]:
    """A GenAI span for one Claude call; call ``.record_usage(in, out)`` with the response.

    ``operation`` is one of LLM_OPERATIONS (ValueError otherwise, even when off,
    so a typo fails in tests rather than in production traces).
    """
    if operation not in LLM_OPERATIONS:
        raise ValueError(f"unknown LLM operation {operation!r}; expected one of "
                         + ", ".join(sorted(LLM_OPERATIONS)))
    # Span name per the GenAI conventions: "{operation} {model}". The SDK's own
    # "anthropic.messages.create" span, if any, nests under this one.
    with span(f"{operation} {model}", **{
            "gen_ai.operation.name": operation, "gen_ai.system": "anthropic",
            "gen_ai.provider.name": "anthropic", "gen_ai.request.model": model}) as s:
        yield s


def configure_provider() -> bool:
    """Install a tracer provider exporting over OTLP/HTTP, unless one is already set.

    The exporter reads the standard OTEL_EXPORTER_OTLP_* variables. Call it after
    fork (worker_process_init): the batch processor owns a thread. True if installed.
    """
    if not enabled():
        return False
    from opentelemetry import trace
    from opentelemetry.sdk.resources import Resource
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import BatchSpanProcessor

    if isinstance(trace.get_tracer_provider(), TracerProvider):
        return False  # the process (or opentelemetry-instrument) configured one already
    try:
        from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
    except ImportError:
        log.warning("RECAP_OTEL_ENABLED is on but opentelemetry-exporter-otlp-proto-http is "
                    "not installed and no tracer provider is set: spans go nowhere "
                    "(pip install 'recap-worker[otel]')")
        return False
    service = os.environ.get("OTEL_SERVICE_NAME") or "recap"
    provider = TracerProvider(resource=Resource.create({"service.name": service}))
    provider.add_span_processor(BatchSpanProcessor(OTLPSpanExporter()))
    trace.set_tracer_provider(provider)
    return True


def instrument_celery() -> bool:
    """Instrument Celery once (publish and run join one trace); safe to call repeatedly.

    Does nothing when tracing is off. True if Celery is instrumented afterwards.
    """
    if not enabled():
        return False
    try:
        from opentelemetry.instrumentation.celery import CeleryInstrumentor
    except ImportError:
        from recap.errors import ConfigError

        raise ConfigError("RECAP_OTEL_ENABLED=true needs opentelemetry-instrumentation-celery "
                          "(pip install 'recap-worker[otel]')") from None
    # The instrumentor is a singleton that remembers its own state.
    instrumentor = CeleryInstrumentor()
    if not instrumentor.is_instrumented_by_opentelemetry:
        instrumentor.instrument()
    return True
