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

import worker
from tests.env import ROOT

PUBLIC = ["add_message", "after_reply", "as_request", "build_context", "configure_session",
          "edit_message", "errors", "forget", "forget_memories", "rewind", "summary_at"]
# Never loaded by the chat app's imports (a module, or a package and everything in it).
FORBIDDEN = ["anthropic", "worker.llm.summarizer", "worker.llm.structured", "worker.llm.titler",
             "worker.llm.client", "worker.jobs.summarize", "worker.tasks", "celery.worker"]


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
        import worker.api.ingest, worker.api.context, worker.sessions.overrides, worker.api.validate
        import worker
    """)
    assert "worker.api.ingest" in modules  # the check ran where it should
    assert forbidden(modules) == []


def test_the_public_names_load_no_sdk_summarizer_jobs_or_celery_worker() -> None:
    modules = loaded_after("""
        from worker import (add_message, after_reply, as_request, build_context,
                            configure_session, errors)
        assert errors.RecapError
    """)
    assert "worker.sessions.overrides" in modules
    assert forbidden(modules) == []


def test_import_worker_alone_loads_nothing_else() -> None:
    # `import worker` (and `recap --help`) reads no settings, no SQLAlchemy, no Celery.
    modules = loaded_after("import worker")
    assert [m for m in modules if m.startswith("worker.")] == []
    assert not {"sqlalchemy", "celery", "anthropic", "pydantic_settings"} & set(modules)


def test_the_public_api_is_exactly_these_names() -> None:
    from worker import (
        add_message,
        after_reply,
        as_request,
        build_context,
        configure_session,
        errors,
        forget,
    )

    assert sorted(worker.__all__) == PUBLIC
    assert errors.__name__ == "worker.errors"
    assert add_message.__module__ == after_reply.__module__ == "worker.api.ingest"
    assert build_context.__module__ == "worker.api.context"
    assert as_request.__module__ == "worker.core.request"  # re-exported by worker.api.context
    assert configure_session.__module__ == "worker.sessions.overrides"
    assert forget.__module__ == "worker.sessions.forget"
    assert worker.rewind.__module__ == "worker.sessions.rewind"
    assert worker.edit_message.__module__ == "worker.sessions.edit"
    assert worker.summary_at.__module__ == "worker.sessions.history"
