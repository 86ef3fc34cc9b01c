"""``recap demo``: the real pipeline on the embedded default, with no services at all.

Alembic creates (or upgrades) a SQLite database, a real Celery worker (threads
pool) runs inside this process, and the scripted conversation
(``recap/demo/conversation.json``) goes through ``recap.api.ingest.add_message``
and ``after_reply`` exactly as a chat app would call them. The demo waits for the
worker after each queued job (as a chat's pace would allow), then prints the
rolling summary, what was condensed (``summary_runs``) and the context
``build_context`` assembles (:mod:`recap.demo.report`). The default thresholds
are used (RECAP_* variables still apply); 80 messages (~30k tokens) are enough
for the capacity rule to fire. Without ANTHROPIC_API_KEY the demo chooses the
offline summarizer for itself (RECAP_SUMMARIZER=offline) and says so once, in a
header at the top of its output; with a key, Claude is called. The report
compares the next call's context without Recap (every message) and with it.

The files are ``recap.sqlite3`` and ``recap-broker.sqlite3`` in a fresh temporary
directory, removed at the end unless ``--keep``, or next to ``--db PATH`` (kept).
DATABASE_URL and CELERY_BROKER_URL from the environment are deliberately
ignored, so the demo never writes into a real database.

The embedded broker is kombu's SQLAlchemy transport on the second SQLite file
(``sqla+sqlite://``, the CELERY_BROKER_URL default), not ``memory://``, because:

- it is what a first ``celery -A recap worker`` uses, so the demo proves that
  default works (see ``recap.worker.celery_app.broker_transport_options``);
- it lives in a file, so it can be shared: ``celery -A recap worker`` given the
  demo's DATABASE_URL and CELERY_BROKER_URL (``--keep`` keeps the files)
  consumes the same queue, which ``memory://`` (private to one process) can
  never do.

Checked with kombu 5.7 and SQLAlchemy 2.1: publish, consume and ack work. Its
limits, acceptable for a demo and a first try but not for production (which
refuses the default broker): consumers poll once a second; consumed rows are
kept (marked invisible), so the table only grows; and there is no visibility
timeout, so a job taken by a worker that is killed is not redelivered (the
sweeper queues the session again once its pending marker is stale).
"""

from __future__ import annotations

import argparse
import os
import shutil
import tempfile
import time
import uuid
from collections.abc import MutableMapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

from recap.demo.conversation import available, load
from recap.demo.report import (
    Out,
    describe_run,
    first_line,
    header,
    print_report,
    route_logs,
    session_state,
)
from recap.errors import ConfigError, WorkerTimeout

if TYPE_CHECKING:
    from recap.settings import Settings

DEFAULT_MESSAGES = 80
DATA_FILE = "recap.sqlite3"  # the file names of the embedded defaults (in the
BROKER_FILE = "recap-broker.sqlite3"  # user's data directory; the demo's are its own)
WAIT_S = 60.0  # per job; the offline summarizer takes milliseconds
TITLE_WAIT_S = 10.0  # for the title job before the report (without it: "no title yet")
POLL_S = 0.1


def file_paths(db: str | None) -> tuple[Path, Path]:
    """(data file, broker file): ``db`` and its sibling, or a fresh temporary directory."""
    if db is None:
        directory = Path(tempfile.mkdtemp(prefix="recap-demo-"))
        return directory / DATA_FILE, directory / BROKER_FILE
    path = Path(db).expanduser().resolve()
    if path.is_dir():
        return path / DATA_FILE, path / BROKER_FILE
    if not path.parent.is_dir():
        raise ConfigError(f"--db {db}: directory {path.parent} does not exist")
    return path, path.with_name(f"{path.stem}-broker{path.suffix or '.sqlite3'}")


def migrate(url: str) -> None:
    """Create the demo's database at the migration head (from the installed package)."""
    from recap.migrate import upgrade

    upgrade(url)


def poll_faster() -> None:
    """Make this process's SQLAlchemy-transport consumers poll every 0.1s instead of 1s.

    Each job would otherwise wait up to a second to be picked up. The transport
    cannot take ``polling_interval`` as a transport option (it would be passed to
    ``create_engine()`` too), so the class default is lowered, in this process only.
    """
    from kombu.transport.sqlalchemy import Transport

    Transport.polling_interval = POLL_S


def demo_environment(data: Path, broker: Path, environ: MutableMapping[str, str]) -> None:
    """The demo's own files; without an API key, the offline summarizer as an explicit
    choice (RECAP_SUMMARIZER=offline, unless RECAP_SUMMARIZER is already set)."""
    environ["DATABASE_URL"] = f"sqlite:///{data}"
    environ["CELERY_BROKER_URL"] = f"sqla+sqlite:///{broker}"
    if not environ.get("ANTHROPIC_API_KEY", "").strip():
        environ.setdefault("RECAP_SUMMARIZER", "offline")


def use_files(data: Path, broker: Path, **overrides: Any) -> Settings:
    """Point settings, engines and the Celery app at the demo's files (``overrides``:
    other settings by field name); returns the Settings, installed as the process's.
    The process environment is read, never written."""
    from recap.db import DatabaseOptions, use_database
    from recap.settings import env_name, load_settings, use_settings
    from recap.worker.celery_app import reconfigure
    from recap.worker.jobs.resources import reset_process_state

    env = {**os.environ, **{env_name(k): str(v) for k, v in overrides.items()}}
    demo_environment(data, broker, env)
    chosen: dict[str, Any] = {"database_url": env["DATABASE_URL"],
                              "celery_broker_url": env["CELERY_BROKER_URL"]}
    if "RECAP_SUMMARIZER" in env:
        chosen["summarizer"] = env["RECAP_SUMMARIZER"]
    settings = load_settings(**{**chosen, **overrides})
    # Settings, engines or the app's configuration may already have been built in
    # this process: rebuild them from these.
    reset_process_state()
    use_settings(settings)
    use_database(DatabaseOptions.of(settings))
    reconfigure(settings)
    poll_faster()
    return settings


class Feeder:
    """Feeds the conversation like a chat app and reports the worker's runs as they land."""

    def __init__(self, session_id: str, out: Out) -> None:
        self.session_id, self.out, self.seen = session_id, out, 0
        self.excerpts: dict[int, str] = {}  # message id -> "role: first words"

    def wait_idle(self) -> list[Any]:
        deadline = time.monotonic() + WAIT_S
        while True:
            idle, runs = session_state(self.session_id)
            for run in runs[self.seen:]:
                self.out.progress("  worker: " + describe_run(run))
            self.seen = len(runs)
            if idle:
                return runs
            if time.monotonic() > deadline:
                raise WorkerTimeout(f"the in-process worker did not finish a job within "
                                    f"{WAIT_S}s")
            time.sleep(0.05)

    def wait_title(self) -> None:
        """Give the title job (queued after the first exchange) a moment to land, so the
        report can show it; a title that fails or is late is reported as missing."""
        from recap.db import transaction
        from recap.models import ChatSession

        deadline = time.monotonic() + TITLE_WAIT_S
        while time.monotonic() < deadline:
            with transaction() as db:
                row = db.get(ChatSession, self.session_id)
            if row is None or row.title is not None or row.title_requested_at is None:
                return
            time.sleep(0.05)

    def feed(self, messages: list[tuple[str, str]]) -> None:
        from recap.api.ingest import add_message, after_reply

        for i, (role, content) in enumerate(messages, start=1):
            message_id = add_message(self.session_id, role, content)
            self.excerpts[message_id] = f"{role}: {first_line(content, 70)}"
            last = i == len(messages)
            # The hook runs after each assistant reply, as in a chat app.
            if (role == "assistant" or last) and after_reply(self.session_id):
                self.out.progress(f"fed {i}/{len(messages)} messages; the hook queued a "
                                  "summarize job; waiting for the worker")
                self.wait_idle()
            elif i % 10 == 0 or last:
                self.out.progress(f"fed {i}/{len(messages)} messages")
        self.wait_idle()


def main(args: argparse.Namespace | None = None) -> int:
    """Run the demo; ``args`` has ``messages`` (int or None), ``db`` (path or None) and
    ``keep`` (keep a temporary directory)."""
    if args is None:
        args = build_parser().parse_args()
    count = args.messages if getattr(args, "messages", None) is not None else DEFAULT_MESSAGES
    if not 1 <= count <= available():
        raise ConfigError(f"--messages must be between 1 and {available()} (the scripted "
                          f"conversation's length), got {count}")
    data, broker = file_paths(getattr(args, "db", None))
    temporary = getattr(args, "db", None) is None
    keep = not temporary or bool(getattr(args, "keep", False))
    try:
        return _run(data, broker, count, keep=keep)
    finally:
        if not keep:
            remove_files(data.parent)


def remove_files(directory: Path) -> None:
    from recap.db import reset_engines

    reset_engines()  # close the SQLite files first
    shutil.rmtree(directory, ignore_errors=True)


def _run(data: Path, broker: Path, count: int, *, keep: bool) -> int:
    settings = use_files(data, broker)
    offline = settings.summarizer_kind == "offline"
    out = Out()
    # The header says it once; the summarizer's own warning would repeat it.
    route_logs(out, skip=("RECAP_SUMMARIZER=offline",) if offline else ())

    from celery.contrib.testing.worker import start_worker

    from recap.worker.celery_app import app
    from recap.worker.jobs.resources import get_resources

    summarizer = get_resources().summarizer  # ConfigError now (e.g. production without a key)
    header(out, offline=offline, model=summarizer.model)
    messages = load(count)
    out.line(f"recap demo: {count} messages of a scripted SRE incident chat go through Recap's "
             "real pipeline")
    out.line("  (add_message + the after_reply hook, as a chat app calls them; a Celery worker "
             "in this process)")
    out.line(f"recap demo: data {data}" + ("" if keep else " (removed at the end; --keep "
                                           "keeps it)"))
    out.line(f"            broker {settings.celery_broker_url} (kombu SQLAlchemy transport)")
    rule = ("each session's own high-water mark and keep window (RECAP_POLICY=adaptive)"
            if settings.policy == "adaptive" else
            f"at >{settings.trigger_messages} messages and a >{settings.trigger_tokens}-token "
            f"batch of {settings.batch_size}, keeping the newest {settings.keep_recent}")
    out.line(f"thresholds: capacity at 80% of {settings.context_budget_tokens} tokens; normal "
             f"{rule} (RECAP_* variables change them)")
    migrate(settings.database_url)
    session_id = f"demo-{uuid.uuid4().hex[:8]}"
    out.progress(f"database migrated; starting an in-process Celery worker; session {session_id}")
    started = time.monotonic()
    with start_worker(app, pool="threads", concurrency=2, perform_ping_check=False,
                      loglevel="WARNING", shutdown_timeout=30):
        feeder = Feeder(session_id, out)
        feeder.feed(messages)
        feeder.wait_title()
        out.progress("the worker is idle; stopping it")
    applied = print_report(session_id, out, feeder.excerpts, messages)
    out.line()
    out.line(f"done in {time.monotonic() - started:.1f}s; "
             + ("a summary was applied" if applied else "no summary was applied (below thresholds)")
             + (f"; inspect with: sqlite3 {data}" if keep
                else f"; removed {data.parent} (--keep keeps it)"))
    out.line("next: docs/get-started/chat-app.md, the calls a chat app makes "
             "(add_message, after_reply, build_context)")
    return 0


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="python -m recap.demo",
        description="Run Recap's real pipeline on a local SQLite database, with no services.")
    add_arguments(parser)
    return parser


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """The demo's options, shared with ``recap demo``."""
    parser.add_argument("--messages", type=int, default=None, metavar="N",
                        help=f"messages to feed (default {DEFAULT_MESSAGES}, at most "
                             "the scripted conversation's length)")
    parser.add_argument("--db", metavar="PATH",
                        help="SQLite database file, kept (default: a new temporary directory, "
                             "removed at the end)")
    parser.add_argument("--keep", action="store_true",
                        help="keep the temporary directory (and say where it is)")
