"""Small helpers shared by tests: seeding conversations and reading state."""

from __future__ import annotations

from collections.abc import Collection
from typing import Any

from sqlalchemy import select

from models import ChatMessage, ChatSession, SummaryRun
from worker.checks import check_invariants
from worker.db import transaction
from worker.api.ingest import add_message

# Thresholds low enough that a dozen short messages trigger a summary of five.
LOW = {"RECAP_TRIGGER_MESSAGES": 10, "RECAP_TRIGGER_TOKENS": 100, "RECAP_BATCH_SIZE": 5,
       "RECAP_KEEP_RECENT": 4}
FINAL = frozenset({"applied", "skipped", "dead", "superseded"})

WORDS = ("budget invoice deploy kubernetes postgres latency refund airport hotel "
         "Lisbon March 14th $2,400 /etc/nginx/nginx.conf timeout retry customer "
         "schema migration release Friday Alice Bob sprint roadmap").split()


def sentence(i: int, words: int) -> str:
    return " ".join(WORDS[(i * 7 + k) % len(WORDS)] for k in range(words)) + f" (msg {i})."


def seed(session_id: str, n: int, *, words: int = 40, pinned: set[int] | None = None,
         roles: list[str] | None = None) -> list[int]:
    """Write ``n`` alternating user/assistant messages; returns their ids."""
    ids = []
    for i in range(n):
        role = roles[i] if roles else ("user" if i % 2 == 0 else "assistant")
        ids.append(add_message(session_id, role, sentence(i, words),
                               pinned=bool(pinned and i in pinned)))
    return ids


def session_row(session_id: str) -> ChatSession | None:
    with transaction() as s:
        return s.get(ChatSession, session_id)


def message_ids(session_id: str) -> list[int]:
    with transaction() as s:
        return list(s.scalars(select(ChatMessage.id).where(ChatMessage.session_id == session_id)
                              .order_by(ChatMessage.id)))


def runs(session_id: str | None = None) -> list[SummaryRun]:
    with transaction() as s:
        q = select(SummaryRun).order_by(SummaryRun.id)
        if session_id is not None:
            q = q.where(SummaryRun.session_id == session_id)
        return list(s.scalars(q))


def statuses(session_id: str) -> list[str]:
    return [r.status for r in runs(session_id)]


def as_dict(obj: Any) -> dict[str, Any]:
    return {c.name: getattr(obj, c.name) for c in obj.__table__.columns}


def run_and_wait(sid: str, *, n: int = 1, timeout: float = 60,
                 final: Collection[str] = FINAL) -> None:
    """Queue one summarize job and wait until ``sid`` has ``n`` runs in ``final``."""
    from tests.conftest import wait_for
    from worker.tasks import summarize_session

    summarize_session.delay(sid)
    wait_for(lambda: sum(1 for s in statuses(sid) if s in final) >= n, timeout=timeout,
             what=f"{n} final run(s) of {sid}")


def assert_invariants(written: dict[str, list[int]]) -> None:
    with transaction() as s:
        assert check_invariants(s, written=written) == []
