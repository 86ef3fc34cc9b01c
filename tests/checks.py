"""The invariant that makes deleting messages safe, as one checker.

For every message ever written to a session: it is still in chat_messages, or it
lies inside the id range of exactly one ``applied`` run of that session. Also:
no message summarized twice, summary_version equals the number of applied runs
(it only grows, by one per apply), no lease is held once workers are idle, and
the counters on chat_sessions equal a recount. Tests and the soak script share it.

Rewinds (recap.sessions.rewind) delete on purpose: a message may also be gone
because a rewind deleted it (inside the rewind's recorded range and condensed
by no live run), and a run a rewind undid (``undone_by``) no longer condenses
anything; every applied run, rewinds included, still counts one version.
Retention: every specific (recap.core.specifics) of every condensed
message is in the session's summary or in its memories (:func:`session_memories`)
or the message is still stored; a condensed tool result's may instead be kept by
its archived copy (recap.core.retention.salience: what a tool returned and nothing used
stays in the archive). The retention guard holds messages back by
shrinking a batch to the prefix before the first held unit, so every run still
condenses exactly the messages of its first..last range (pinned ones aside, which
stay): the range rule above stays exact, and a held message lies only in the
range of the later run that condenses it.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping

from sqlalchemy import func, select
from sqlalchemy.orm import Session

from recap.core.specifics import absent, extract_specifics
from recap.models import ArchivedMessage, ChatMessage, ChatSession, Memory, SummaryRun


def session_memories(s: Session, session_id: str) -> list[str]:
    """The text of every memory the session keeps: its own and, when it names a user,
    the user's (what the retention invariant may count as kept besides the summary).
    Superseded memories count: they are kept, for audit, though never shown."""
    from recap.store.recall import session_scopes

    scopes = session_scopes(session_id, db=s)
    return list(s.scalars(select(Memory.fact).where(
        Memory.scope.in_(scopes) | (Memory.session_id == session_id))))


def check_invariants(s: Session, *, written: Mapping[str, Iterable[int]] | None = None,
                     idle: bool = True,
                     written_texts: Mapping[str, Mapping[int, str]] | None = None) -> list[str]:
    """Return every violated invariant as a readable line (empty list: all good).

    ``written`` maps session id -> ids of every message written to it (when the
    caller knows); ``idle`` means no job may be running, so no lease may be held.
    ``written_texts`` maps session id -> {message id: the text written}, for the
    retention check (the checker cannot read deleted rows).
    """
    problems: list[str] = []
    sessions = {r.id: r for r in s.scalars(select(ChatSession))}
    counts: dict[str, int] = {}
    tokens: dict[str, int] = {}
    for sid, n, total in s.execute(
            select(ChatMessage.session_id, func.count(), func.sum(ChatMessage.token_count))
            .group_by(ChatMessage.session_id)):
        counts[sid], tokens[sid] = n, total
    applied: dict[str, list[tuple[int | None, int | None, int]]] = {}
    versions: dict[str, int] = {}
    rewinds = _rewinds(s)
    for sid, first, last, n, undone in s.execute(
            select(SummaryRun.session_id, SummaryRun.first_message_id,
                   SummaryRun.last_message_id, SummaryRun.messages_condensed,
                   SummaryRun.undone_by)
            .where(SummaryRun.status == "applied")):
        versions[sid] = versions.get(sid, 0) + 1
        if undone is None:  # a run a rewind undid condenses nothing any more
            applied.setdefault(sid, []).append((first, last, n))

    for sid, row in sessions.items():
        if row.message_count != counts.get(sid, 0):
            problems.append(f"{sid}: message_count {row.message_count} != recount "
                            f"{counts.get(sid, 0)}")
        if row.active_tokens != (tokens.get(sid) or 0):
            problems.append(f"{sid}: active_tokens {row.active_tokens} != recount "
                            f"{tokens.get(sid) or 0}")
        runs = applied.get(sid, [])
        if row.summary_version != versions.get(sid, 0):
            problems.append(f"{sid}: summary_version {row.summary_version} != "
                            f"{versions.get(sid, 0)} applied runs")
        condensed = sum(n for _, _, n in runs)
        if row.summarized_message_count != condensed:
            problems.append(f"{sid}: summarized_message_count {row.summarized_message_count} "
                            f"!= {condensed} condensed by applied runs")
        if condensed and not row.rolling_summary:
            problems.append(f"{sid}: applied runs but no rolling_summary")
        if idle and row.lease_token is not None:
            problems.append(f"{sid}: lease still held after the workers went idle")

    for sid, ids in (written or {}).items():
        ids = list(ids)
        present = set(s.scalars(select(ChatMessage.id).where(ChatMessage.session_id == sid)))
        runs = applied.get(sid, [])
        gone = [m for m in ids if m not in present]
        gone = [m for m in gone if not _rewound(rewinds.get(sid, []), runs, m)]
        for m in gone:
            covering = sum(1 for first, last, _ in runs
                           if first is not None and last is not None and first <= m <= last)
            if covering != 1:
                problems.append(f"{sid}: message {m} is gone and inside {covering} applied "
                                "runs (lost)" if covering == 0 else
                                f"{sid}: message {m} is inside {covering} applied runs "
                                "(summarized twice)")
        if len(gone) != sum(n for _, _, n in runs):
            problems.append(f"{sid}: {len(gone)} messages gone but applied runs condensed "
                            f"{sum(n for _, _, n in runs)}")
        unknown = present - set(ids)
        if unknown:
            problems.append(f"{sid}: {len(unknown)} messages present that were never written "
                            "to this session")
    for sid, texts in (written_texts or {}).items():
        problems += _lost_specifics(s, sid, texts, sessions.get(sid))
    return problems


def _lost_specifics(s: Session, sid: str, texts: Mapping[int, str],
                    row: ChatSession | None) -> list[str]:
    """One line per condensed message with a specific in neither the summary nor
    the memories of its session."""
    present = set(s.scalars(select(ChatMessage.id).where(ChatMessage.session_id == sid)))
    kept = [row.rolling_summary or "" if row else "", *session_memories(s, sid)]
    tools = {i: blocks for i, role, blocks in s.execute(
        select(ArchivedMessage.id, ArchivedMessage.role, ArchivedMessage.blocks)
        .where(ArchivedMessage.session_id == sid, ArchivedMessage.id.in_(list(texts))))
        if role == "tool" or (blocks and all(b.get("type") == "tool_result" for b in blocks))}
    problems = []
    for m, text in sorted(texts.items()):
        if m in present or m in tools:
            continue
        lost = absent(extract_specifics(text), kept)
        if lost:
            problems.append(f"{sid}: message {m} was condensed and {len(lost)} of its "
                            f"specifics are lost: {', '.join(sorted(lost)[:5])}")
    return problems


def _rewinds(s: Session) -> dict[str, list[tuple[int, int]]]:
    """Per session, the (after, through] id ranges rewinds deleted."""
    out: dict[str, list[tuple[int, int]]] = {}
    for sid, after, last in s.execute(
            select(SummaryRun.session_id, SummaryRun.rewound_after, SummaryRun.last_message_id)
            .where(SummaryRun.rewound_after.isnot(None), SummaryRun.last_message_id.isnot(None))):
        if after is not None and last is not None:
            out.setdefault(sid, []).append((after, last))
    return out


def _rewound(ranges: list[tuple[int, int]], runs: list[tuple[int | None, int | None, int]],
             m: int) -> bool:
    """Message ``m`` is gone because a rewind deleted it: inside a rewind's range and
    condensed by no live run (a rewound message cannot be condensed later)."""
    return (any(after < m <= last for after, last in ranges)
            and not any(f is not None and t is not None and f <= m <= t for f, t, _ in runs))
