"""What the chat app pays to import Recap: its API must not load the SDK, the
summarizer, the job machinery or Celery's worker. Checked in a fresh interpreter,
since this test process has long imported everything."""

from __future__ import annotations

import importlib.util
import json
import os
import subprocess
import sys
import textwrap

import pytest

import recap
from tests.env import ROOT

pytestmark = pytest.mark.unit

PUBLIC = ["SessionView", "add_message", "after_reply", "aio", "as_request", "build_context",
          "configure_session", "edit_message", "errors", "forget", "forget_memories", "recall",
          "recall_tool", "recall_tool_definition",
          "rewind", "session", "summary_at", "tenant", "warm_up"]
# Never loaded by the chat app's imports (a module, or a package and everything in it).
FORBIDDEN = ["anthropic", "recap.llm.summarizer", "recap.llm.structured", "recap.llm.titler",
             "recap.llm.client", "recap.worker.jobs.summarize", "recap.worker.tasks",
             "celery.worker"]


def loaded_after(code: str) -> list[str]:
    """The module names in ``sys.modules`` after a fresh interpreter runs ``code``."""
    script = textwrap.dedent(code) + "\nimport json, sys\nprint(json.dumps(sorted(sys.modules)))\n"
    result = subprocess.run([sys.executable, "-c", script], cwd=ROOT, env=dict(os.environ),
                            capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stderr
    modules: list[str] = json.loads(result.stdout.strip().splitlines()[-1])
    return modules


def test_every_forbidden_name_is_a_module_that_exists() -> None:
    # A renamed module would leave its old name here, checking nothing.
    assert [f for f in FORBIDDEN if importlib.util.find_spec(f) is None] == []


def forbidden(modules: list[str]) -> list[str]:
    return [m for m in modules
            if any(m == f or m.startswith(f + ".") for f in FORBIDDEN)]


def test_the_api_modules_load_no_sdk_summarizer_jobs_or_celery_worker() -> None:
    modules = loaded_after("""
        import recap.api.ingest, recap.api.context, recap.sessions.overrides, recap.api.validate
        import recap
    """)
    assert "recap.api.ingest" in modules  # the check ran where it should
    assert forbidden(modules) == []


def test_the_public_names_load_no_sdk_summarizer_jobs_or_celery_worker() -> None:
    modules = loaded_after("""
        from recap import (add_message, after_reply, as_request, build_context,
                            configure_session, errors, session, warm_up)
        assert errors.RecapError
    """)
    assert "recap.sessions.overrides" in modules and "recap.sessions.view" in modules
    assert forbidden(modules) == []


def test_import_worker_alone_loads_nothing_else() -> None:
    # `import recap` (and `recap --help`) reads no settings, no SQLAlchemy, no Celery.
    modules = loaded_after("import recap")
    assert [m for m in modules if m.startswith("recap.")] == []
    assert not {"sqlalchemy", "celery", "anthropic", "pydantic_settings"} & set(modules)


def test_the_public_api_is_exactly_these_names() -> None:
    from recap import (
        add_message,
        after_reply,
        as_request,
        build_context,
        configure_session,
        errors,
        forget,
    )

    assert sorted(recap.__all__) == PUBLIC
    assert errors.__name__ == "recap.errors"
    assert add_message.__module__ == after_reply.__module__ == "recap.api.ingest"
    assert build_context.__module__ == "recap.api.context"
    assert as_request.__module__ == "recap.core.context.request"  # re-exported by recap.api.context
    assert configure_session.__module__ == "recap.sessions.overrides"
    assert forget.__module__ == "recap.sessions.forget"
    assert recap.rewind.__module__ == "recap.sessions.rewind"
    assert recap.edit_message.__module__ == "recap.sessions.edit"
    assert recap.summary_at.__module__ == "recap.sessions.history"
    assert recap.session.__module__ == recap.SessionView.__module__ == "recap.sessions.view"
    # The public submodules: the asyncio API, the stand-in, the adapters.
    from recap import aio, integrations, testing

    assert aio.build_context.__module__ == "recap.api.aio"
    assert testing.FakeAnthropic.__module__.startswith("recap.testing")
    assert integrations.__name__ == "recap.integrations"
