"""The benchmark environment: a private PostgreSQL database, a Redis db and queue,
the local Claude stand-in, and where plots go.

Settings are read from the environment once per process (cached) and the Celery
app is configured from them on first use, so :func:`setup` sets every variable
before anything uses Recap, and :func:`configure` resets the process state after
a change. One environment serves a whole ``recap bench`` run; :func:`teardown`
drops the database and the queue. Everything comes from the installed package:
the migrations (recap.migrate), the stand-in (recap.evals.standin), the demo's
conversation (recap.demo).
"""

from __future__ import annotations

import os
import socket
import sys
import uuid
from dataclasses import dataclass
from pathlib import Path
from typing import Any


def use_offline_encodings() -> None:
    """With no TIKTOKEN_CACHE_DIR, a checkout's neighbouring tiktoken-cache folder
    (recap.paths.checkout_tiktoken_cache), for this process and the workers it starts."""
    from recap.paths import checkout_tiktoken_cache

    if not os.environ.get("TIKTOKEN_CACHE_DIR") and (found := checkout_tiktoken_cache()):
        os.environ["TIKTOKEN_CACHE_DIR"] = str(found)


PG_ADMIN = os.environ.get("RECAP_BENCH_PG", "postgresql+psycopg://postgres@127.0.0.1:5432/postgres")
REDIS_URL = os.environ.get("RECAP_BENCH_REDIS", "redis://127.0.0.1:6379/13")
DEFAULT_LATENCY_S = 0.8
SYSTEM_PROMPT = "You are the Larkspur Analytics SRE assistant."


@dataclass
class BenchEnv:
    db_name: str
    database_url: str
    broker_url: str
    queue: str
    latency: float
    fake: Any  # recap.evals.standin.EvalFake

    def base_env(self) -> dict[str, str]:
        """The environment a worker subprocess needs (also set in this process)."""
        return dict(BASE_ENV, DATABASE_URL=self.database_url, CELERY_BROKER_URL=self.broker_url,
                    ANTHROPIC_BASE_URL=self.fake.url, RECAP_QUEUE=self.queue)


# Generous time limits: a benchmark job must never be cut short by the test-sized ones.
BASE_ENV = {
    "RECAP_ENV": "test",
    "ANTHROPIC_API_KEY": "sk-ant-bench-not-a-real-key",
    "RECAP_SUMMARIZER": "claude",
    "RECAP_LLM_TIMEOUT_S": "60",
    "RECAP_MAX_RETRIES": "2",
    "RECAP_RETRY_BACKOFF_S": "0.1",
    "RECAP_RETRY_BACKOFF_MAX_S": "1",
}

_CURRENT: BenchEnv | None = None
# --plots DIR: where the benchmarks that draw write their PNG files (None: no plots).
_PLOTS: list[Path | None] = [None]


def admin(sql: str) -> None:
    """Run ``sql`` (CREATE or DROP DATABASE) on the PostgreSQL server, outside a transaction."""
    from sqlalchemy import create_engine, text

    engine = create_engine(PG_ADMIN, isolation_level="AUTOCOMMIT")
    with engine.connect() as conn:
        conn.execute(text(sql))
    engine.dispose()


def migrate(url: str) -> None:
    """Create Recap's tables in the database at ``url`` (the package's migrations)."""
    from alembic import command

    from recap.migrate import alembic_config

    command.upgrade(alembic_config(url), "head")


def setup(latency: float = DEFAULT_LATENCY_S) -> BenchEnv:
    """Create (once per process) the database, queue and stand-in; set the environment."""
    global _CURRENT
    if _CURRENT is not None:
        _CURRENT.fake.delay = latency
        _CURRENT.latency = latency
        return _CURRENT
    use_offline_encodings()
    # The eval's stand-in: the bench's fair peer replies, and it mines the user's
    # first-person statements as durable facts in Recap's summary calls, as a
    # model would ("my manager is called Ingrid").
    from recap.evals.standin import EvalFake

    run = uuid.uuid4().hex[:8]
    db_name = f"recap_bench_{run}"
    fake = EvalFake().start()
    fake.delay = latency
    env = BenchEnv(db_name=db_name, database_url=PG_ADMIN.rsplit("/", 1)[0] + "/" + db_name,
                   broker_url=REDIS_URL, queue=f"recap-bench-{run}", latency=latency, fake=fake)
    os.environ.update(env.base_env())
    admin(f'CREATE DATABASE "{db_name}"')
    migrate(env.database_url)
    _CURRENT = env
    return env


def current() -> BenchEnv | None:
    """The environment :func:`setup` made, if any (a bench run alone sets it up)."""
    return _CURRENT


def teardown() -> None:
    """Drop the database and the Redis queue; stop the stand-in."""
    global _CURRENT
    env, _CURRENT = _CURRENT, None
    if env is None:
        return
    from recap.db import reset_engines

    reset_engines()
    admin(f'DROP DATABASE IF EXISTS "{env.db_name}" WITH (FORCE)')
    try:
        import redis

        client = redis.Redis.from_url(env.broker_url)
        keys = list(client.scan_iter(f"*{env.queue}*"))  # the queue and kombu's bindings
        if keys:
            client.delete(*keys)
    except Exception as exc:  # a leftover queue key is harmless; say so and go on
        print(f"note: could not delete Redis queue {env.queue}: {exc}", file=sys.stderr)
    env.fake.stop()


# Every variable configure() set, so reset_state() drops them all: a setting of one
# swept run must never leak into the next.
_CONFIGURED: set[str] = set()


def configure(**values: object) -> None:
    """Override settings for the next step (``RECAP_BATCH_SIZE=5``); None unsets."""
    from recap.worker.jobs.resources import reset_process_state

    for key, value in values.items():
        if value is None:
            os.environ.pop(key, None)
            _CONFIGURED.discard(key)
        else:
            os.environ[key] = str(value)
            _CONFIGURED.add(key)
    reset_process_state()


def reset_state(*thresholds: str) -> None:
    """Empty the tables, reset the stand-in and drop threshold overrides."""
    from sqlalchemy import text

    from recap.db import transaction

    with transaction() as s:
        # CASCADE: also empties any newer table that references chat_sessions.
        s.execute(text("TRUNCATE chat_messages, chat_sessions, summary_runs CASCADE"))
    assert _CURRENT is not None
    latency = _CURRENT.latency
    _CURRENT.fake.reset()
    _CURRENT.fake.delay = latency
    configure(**{k: None for k in (*THRESHOLD_VARS, *FEATURE_VARS, *thresholds, *_CONFIGURED)})


FEATURE_VARS = ("RECAP_EXTRACT_MEMORIES", "RECAP_TITLES_ENABLED", "RECAP_MEMORY_BUDGET_TOKENS")
THRESHOLD_VARS = ("RECAP_POLICY", "RECAP_TRIGGER_MESSAGES", "RECAP_TRIGGER_TOKENS",
                  "RECAP_BATCH_SIZE", "RECAP_KEEP_RECENT", "RECAP_CONTEXT_BUDGET_TOKENS",
                  "RECAP_CONDENSE_TO")


def free_port() -> int:
    """A local TCP port nothing listens on right now (bound, then released)."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def plot_to(folder: Path | None) -> None:
    """Write the plots of this run into ``folder`` (created when needed); None: no plots."""
    _PLOTS[0] = folder


def plot_path(name: str) -> Path | None:
    """Where the plot ``name`` (``throughput.png``) goes, or None when no plots were asked for."""
    return None if _PLOTS[0] is None else _PLOTS[0] / name


def save_plot(fig: Any, path: Path) -> str:
    """Write a matplotlib figure to ``path`` and close it; the line naming the plot."""
    from recap.bench.harness.extras import pyplot

    fig.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=110)
    pyplot().close(fig)
    return f"\n\nPlot: {path}"
