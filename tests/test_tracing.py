"""Optional OpenTelemetry tracing: spans and attributes when on, nothing at all when off,
and one trace from a Celery publish to the job's execution."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from collections.abc import Callable, Iterator
from typing import Any

import pytest

from recap import tracing
from recap.api.ingest import add_message
from recap.worker.celery_app import app
from recap.worker.jobs.resources import get_resources
from recap.worker.jobs.titles import title_session
from tests.env import ROOT
from tests.helpers import require_module, wait_for

_EXPORTER: Any = None
OTEL = "pip install -e '.[otel]' (part of [dev])"


def _in_memory_exporter() -> Any:
    """One in-memory exporter on the process's global SDK provider (set at most once)."""
    global _EXPORTER
    if _EXPORTER is None:
        require_module("opentelemetry.sdk.trace", OTEL)
        from opentelemetry import trace
        from opentelemetry.sdk.trace import TracerProvider
        from opentelemetry.sdk.trace.export import SimpleSpanProcessor
        from opentelemetry.sdk.trace.export.in_memory_span_exporter import (
            InMemorySpanExporter,
        )

        provider = trace.get_tracer_provider()
        if not isinstance(provider, TracerProvider):
            # The global provider can be set once per process; later sets are ignored.
            provider = TracerProvider()
            trace.set_tracer_provider(provider)
        _EXPORTER = InMemorySpanExporter()
        provider.add_span_processor(SimpleSpanProcessor(_EXPORTER))
    _EXPORTER.clear()
    return _EXPORTER


@pytest.fixture
def spans(settings_env: Callable[..., None]) -> Iterator[Any]:
    """Tracing on, and the exporter that receives the finished spans."""
    exporter = _in_memory_exporter()
    settings_env(RECAP_OTEL_ENABLED="true")
    get_resources()  # what a worker does at start: tracing follows the settings
    assert tracing.enabled()
    yield exporter
    exporter.clear()


@pytest.mark.unit
def test_span_records_name_attributes_and_nesting(spans: Any) -> None:
    with tracing.span("recap.summarize_session", session_id="s1", attempt=2,
                      task_id=None) as outer:
        outer.set_attribute("recap.outcome", "applied")
        with tracing.span("inner", path=ROOT):
            pass
    inner, job = spans.get_finished_spans()
    assert job.name == "recap.summarize_session"
    assert dict(job.attributes) == {"session_id": "s1", "attempt": 2,
                                    "recap.outcome": "applied"}  # None left out
    assert inner.parent.span_id == job.context.span_id
    assert inner.attributes["path"] == str(ROOT)  # non-OTel types recorded as text


@pytest.mark.unit
def test_span_records_an_exception_and_reraises(spans: Any) -> None:
    from opentelemetry.trace import StatusCode

    with pytest.raises(KeyError), tracing.span("failing"):
        raise KeyError("boom")
    (span,) = spans.get_finished_spans()
    assert span.status.status_code is StatusCode.ERROR
    assert span.attributes["error.type"] == "KeyError"
    assert [e.name for e in span.events] == ["exception"]


@pytest.mark.unit
def test_llm_span_has_the_genai_attributes(spans: Any) -> None:
    with tracing.llm_span("generate_title", "claude-haiku-5-5") as s:
        s.record_usage(812, 9)
    (span,) = spans.get_finished_spans()
    assert span.name == "generate_title claude-haiku-5-5"
    attrs = dict(span.attributes)
    assert attrs["gen_ai.operation.name"] == "generate_title"
    assert attrs["gen_ai.system"] == "anthropic"
    assert attrs["gen_ai.request.model"] == "claude-haiku-5-5"
    assert attrs["gen_ai.usage.input_tokens"] == 812
    assert attrs["gen_ai.usage.output_tokens"] == 9


@pytest.mark.unit
def test_unknown_llm_operations_are_refused_even_when_off() -> None:
    with pytest.raises(ValueError, match="unknown LLM operation 'summarise'"), \
            tracing.llm_span("summarise", "m"):
        pass


@pytest.mark.unit
def test_off_is_a_no_op_that_records_nothing(settings_env: Callable[..., None]) -> None:
    exporter = _in_memory_exporter()
    settings_env(RECAP_OTEL_ENABLED="false")
    get_resources()
    assert not tracing.enabled()
    with tracing.span("x", a=1) as s, tracing.llm_span("summarize", "m") as llm:
        s.set_attribute("b", 2)
        llm.record_usage(1, 2)
    assert not tracing.instrument_celery()
    assert exporter.get_finished_spans() == ()


def _run(code: str, **env: str) -> str:
    result = subprocess.run([sys.executable, "-c", textwrap.dedent(code)], cwd=ROOT,
                            env={**os.environ, **env}, capture_output=True, text=True,
                            timeout=120)
    assert result.returncode == 0, result.stderr
    return result.stdout.strip()


@pytest.mark.unit
def test_off_never_imports_opentelemetry() -> None:
    out = _run("""
        import sys
        from recap import tracing
        with tracing.span("x", a=1) as s, tracing.llm_span("summarize", "m") as llm:
            s.set_attribute("b", 2)
            llm.record_usage(1, 2)
        assert tracing.instrument_celery() is False
        assert tracing.configure_provider() is False
        print(sorted(m for m in sys.modules if m.startswith("opentelemetry")))
    """, RECAP_OTEL_ENABLED="false")
    assert out == "[]"


@pytest.mark.unit
def test_configure_provider_installs_one_unless_set() -> None:
    require_module("opentelemetry.exporter.otlp.proto.http.trace_exporter", OTEL)
    out = _run("""
        from opentelemetry import trace
        from recap import tracing
        from recap.settings import get_settings
        tracing.configure(enabled=get_settings().otel_enabled)  # as each entry point does
        assert tracing.configure_provider() is True
        assert tracing.configure_provider() is False  # already set: left alone
        provider = trace.get_tracer_provider()
        print(type(provider).__name__, provider.resource.attributes["service.name"])
    """, RECAP_OTEL_ENABLED="true", OTEL_SERVICE_NAME="recap-worker",
        OTEL_EXPORTER_OTLP_ENDPOINT="http://127.0.0.1:9")
    assert out == "TracerProvider recap-worker"


@pytest.fixture
def instrumented(spans: Any) -> Iterator[Any]:
    require_module("opentelemetry.instrumentation.celery", OTEL)
    from opentelemetry.instrumentation.celery import CeleryInstrumentor

    assert tracing.instrument_celery()
    assert tracing.instrument_celery()  # a second call is harmless
    yield spans
    CeleryInstrumentor().uninstrument()  # other tests run uninstrumented


def test_publish_and_execution_share_one_trace(instrumented: Any,
                                               celery_worker_thread: object) -> None:
    # Published by name, as every producer does (nothing imports recap.worker.tasks).
    with tracing.span("chat.reply"):
        app.send_task("recap.tasks.summarize_session", ("otel-session",), retry=False)

    def finished(prefix: str) -> list[Any]:
        return [s for s in instrumented.get_finished_spans() if s.name.startswith(prefix)]

    wait_for(lambda: finished("run/recap.tasks.summarize_session"), what="the consumer span")
    (run,) = finished("run/recap.tasks.summarize_session")
    (publish,) = finished("apply_async/recap.tasks.summarize_session")
    (reply,) = finished("chat.reply")
    assert run.context.trace_id == publish.context.trace_id == reply.context.trace_id
    assert run.parent.span_id == publish.context.span_id
    assert publish.parent.span_id == reply.context.span_id


def test_title_jobs_are_traced(spans: Any, fake_api: Any) -> None:
    add_message("s1", "user", "Why do I get 502s from nginx?")
    add_message("s1", "assistant", "Check proxy_read_timeout.")
    assert title_session("s1", res=get_resources()) is not None
    (job,) = [s for s in spans.get_finished_spans() if s.name == "recap.title_session"]
    assert job.attributes["session_id"] == "s1"
    # Whatever the call emits (our GenAI span, the SDK's own) nests in the job's trace.
    assert {s.context.trace_id for s in spans.get_finished_spans()} == {job.context.trace_id}
