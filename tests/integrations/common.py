"""What the adapters' tests share: a conversation that folds twice, reading
what Recap stored, and waiting for the worker."""

from __future__ import annotations

from sqlalchemy import func, select

from recap.db import transaction
from recap.models import ChatMessage, ChatSession, StoredKey
from tests.env import TEST_ENV
from tests.helpers import LOW, join_worker, sentence, statuses

# A dozen short messages trigger a fold of five (tests/helpers.py LOW), so the
# conversation below folds at least twice.
THRESHOLDS = LOW
TURNS = 7


def question(i: int) -> str:
    """The user's i-th question: each names a marker no other message holds."""
    return (f"Question {i}: what is the weather in city-{i} (marker q{i}x)? Some context: "
            + sentence(i, 40))


def drain() -> None:
    """Wait until every job queued so far has finished (the in-process worker)."""
    join_worker(TEST_ENV["RECAP_QUEUE"])


def applied(session_id: str) -> int:
    return statuses(session_id).count("applied")


def active_texts(session_id: str) -> list[str]:
    with transaction() as s:
        return list(s.scalars(select(ChatMessage.content).where(
            ChatMessage.session_id == session_id).order_by(ChatMessage.id)))


def stored_total(session_id: str) -> int:
    """Messages ever stored in the session: active plus summarized."""
    with transaction() as s:
        row = s.get(ChatSession, session_id)
        active = s.scalar(select(func.count()).select_from(ChatMessage)
                          .where(ChatMessage.session_id == session_id))
        return int(active or 0) + int(row.summarized_message_count if row else 0)


def summary(session_id: str) -> str:
    with transaction() as s:
        row = s.get(ChatSession, session_id)
        assert row is not None and row.rolling_summary
        return row.rolling_summary


def keys(session_id: str) -> int:
    with transaction() as s:
        return int(s.scalar(select(func.count()).select_from(StoredKey)
                            .where(StoredKey.session_id == session_id)) or 0)


def folded_markers(session_id: str) -> set[str]:
    """Markers of questions no longer in the active window (folded into the summary)."""
    active = "\n".join(active_texts(session_id))
    return {f"q{i}x" for i in range(TURNS) if f"q{i}x" not in active}
