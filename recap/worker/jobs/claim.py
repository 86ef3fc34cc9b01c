"""Step 1 of a summarize job: take the lease and read everything the job needs.

``claim_session`` owns exactly one transaction. It returns a :class:`Claim`
(the lease is held; every later step reads this value, not the database) or an
:class:`Outcome` saying why not (skipped or dead), already recorded in
``summary_runs``.
"""

from __future__ import annotations

import dataclasses
import uuid
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Any, NamedTuple

from sqlalchemy import Interval, Update, bindparam, func, select, update

from recap.core.content.render import full_text
from recap.core.memories.channels import typed_words
from recap.core.memories.provenance import own_text
from recap.core.planning import policy
from recap.core.planning.resends import FoldOutcome
from recap.core.prompts.summarize import Turn
from recap.core.retention import salience, stubs
from recap.core.retention.repairs import RepairOutcome
from recap.core.retention.salience import Salience, Voice, Voices
from recap.core.tenant import tenant_of
from recap.db import Db, core_transaction, db_now, on_server_clock
from recap.errors import InvalidInput
from recap.llm.tokens import count_tokens
from recap.models import messages_table as MESSAGES
from recap.models import sessions_table as SESSIONS
from recap.settings import Settings, effective
from recap.store.fence import lease_expiry, release, take_lease
from recap.store.plans import message_infos, plan_flags
from recap.store.recall import memories_for_prompt
from recap.store.runs import (
    RunRecord,
    held_before,
    last_run,
    recent_folds,
    recent_repairs,
    record_run,
)
from recap.worker.jobs import own_stubs
from recap.worker.jobs.outcome import Job, Outcome, Status
from recap.worker.jobs.own_stubs import as_data
from recap.worker.jobs.resources import Resources

# Memories offered to the mining call: enough for the facts a batch can update,
# few enough to cost little next to the batch. Ranked against its newest turns.
KNOWN_MEMORIES = 10
KNOWN_QUERY_TURNS = 8


@dataclass(frozen=True)
class Claim:
    """What the claim took and read: everything the later steps of the job need, so
    none of them reads the database again before the apply."""

    session_id: str
    token: str
    version: int
    previous_summary: str | None
    # The batch as stored (a block message in full): what the retention guard
    # requires specifics of. What the model is sent is cut from it (recap.worker.jobs.render).
    turns: tuple[Turn, ...]
    plan: policy.Plan
    settings: Settings  # with this session's overrides applied
    # The active messages the plan saw; what is left after the apply is these
    # minus the batch, unless more arrived during the call.
    messages: tuple[policy.MessageInfo, ...] = ()
    # The batch as the summarizer is sent it when tool output is cleared
    # (RECAP_CLEAR_TOOL_RESULTS): each tool result as its stub and the lines that
    # hold what salience ranks above REST (recap.core.retention.stubs.brief). Empty:
    # the stored turns are sent.
    sent: tuple[Turn, ...] = ()
    # (id, fact) of the live memories most relevant to the batch, offered to the
    # mining call so it can say a new fact replaces one (recap.llm.structured).
    known: tuple[tuple[int, str], ...] = ()
    # What the user typed in the batch (recap.core.memories.provenance.own_text without
    # pasted blocks: recap.core.memories.channels.typed_words; one entry per user
    # turn): a fact is the user's only if their own words back it.
    own_words: tuple[str, ...] = ()
    # The batch's specifics ranked by salience (recap.core.retention.salience) from the
    # batch and the messages after it: read when the retention guard is on, which
    # ranks what it keeps by them. None: not read, or an empty batch.
    ranked: Salience | None = None
    # Read when the retention guard is on. Whether repairs helped the job's model
    # lately (recap.core.retention.repairs), and the batch's messages the last applied run
    # held back (they may not be held back again: recap.core.retention.guard.settle).
    recent_repairs: tuple[RepairOutcome, ...] = ()
    held_before: frozenset[int] = frozenset()
    # How the job's model's latest folds went (recap.core.planning.resends): a model
    # whose folds were all kept extractively lately is asked once, without resends.
    recent_folds: tuple[FoldOutcome, ...] = ()
    # The batch and the messages after it as salience reads them, and the batch's
    # tool results by id: what the ranking and the brief are made from again when
    # the batch is cut to the job's requests (:func:`narrowed`).
    voices: Voices = Voices()
    results: dict[int, list[dict[str, Any]]] = field(default_factory=dict)


def record(session_id: str, *, db: Db, job: Job, status: Status, reason: str,
           mode: policy.Mode | None = None) -> Outcome:
    """Record the summary_runs row of a job that condensed nothing (skipped or dead)."""
    record_run(RunRecord(session_id=session_id, task_id=job.task_id, attempt=job.attempt,
                         status=status, reason=reason, mode=mode), db=db)
    return Outcome(session_id, status, reason, mode=mode)


def record_rejected(session_id: object, reason: str, *, job: Job) -> Outcome:
    """Record a ``skipped`` run for a job given an id that cannot name a session."""
    shown = session_id if isinstance(session_id, str) else repr(session_id)
    shown = shown.encode("utf-8", "backslashreplace").decode().replace("\x00", "\\x00")[:255]
    with core_transaction() as s:
        return record(shown, db=s, job=job, status="skipped",
                      reason=f"rejected session id: {reason}")


POISON_WAITS = ("dead-lettered by a lost worker or bad overrides: waits for its cool-down "
                "or recap retry")


def dead_lettered_by_claim(session_id: str, *, db: Db) -> bool:
    """Whether the session's last dead run was recorded by the claim itself (a worker
    lost while holding it, or bad overrides: no model error), not by a failed call."""
    last = last_run(session_id, db=db, status="dead")
    return last is not None and last.error is None


def claim_session(session_id: str, *, job: Job, res: Resources,
                  now: datetime | None = None, force: bool = False,
                  carried: Callable[[Settings, str | None], int | None] | None = None
                  ) -> Claim | Outcome:
    """Take the lease and read everything the job needs, in one transaction; or
    record why not (skipped or dead) and return that outcome.

    ``force``: condense the candidate batch even when no rule fires (mode ``forced``).
    ``carried``: the most tokens the job's requests carry, for the session's
    effective settings and its summary (no I/O; None: not known yet:
    recap.worker.jobs.sizing); the planned batch is cut to it, the rest left for
    the next job (whether and what the rules fold is planned without it).
    """
    token = str(uuid.uuid4())
    with core_transaction() as s:
        taken = _take_lease(session_id, db=s, token=token, lease_s=res.settings.lease_s,
                            now=now)
        if taken is None:
            exists = s.scalar(select(SESSIONS.c.id).where(SESSIONS.c.id == session_id))
            return record(session_id, db=s, job=job, status="skipped",
                          reason=("lease held by another job" if exists
                                  else f"session {session_id!r} not found"))
        row, now = taken
        settings, refused = _judge(session_id, row, db=s, settings=res.settings)
        if refused is not None:
            release(session_id, db=s, token=token, blocked_until=(
                now + timedelta(seconds=settings.dead_cooldown_s) if refused.status == "dead"
                else None))
            return record(session_id, db=s, job=job, status=refused.status,
                          reason=refused.reason)
        messages = tuple(message_infos(session_id, db=s))
        plan = policy.plan(messages, summary_tokens=row.summary_tokens,
                           t=settings.thresholds(), force=force)
        flags = plan_flags(plan, settings)
        if (row.needs_escalation, row.normal_blocked, row.normal_blocked_under) != flags:
            s.execute(update(SESSIONS).where(SESSIONS.c.id == session_id)
                      .values(**flags._asdict()))
        if not plan.should_summarize:
            release(session_id, db=s, token=token)
            back_off_noops(session_id, db=s, row=row, now=now, base_s=settings.sweep_interval_s)
            return record(session_id, db=s, job=job, status="skipped", reason=plan.reason,
                          mode=plan.mode)
        if carried is not None:
            plan = _within(plan, messages, carried(settings, row.rolling_summary))
        claim, voices, results = _read_batch(
            Claim(session_id, token, row.summary_version, row.rolling_summary, (), plan,
                  settings, messages), db=s, model=res.model_for(settings))
    # Pure and proportional to the batch (megabytes, at times): after the commit, so
    # the session's row is not held meanwhile.
    return _ranked(claim, voices, results)


def _within(plan: policy.Plan, messages: Sequence[policy.MessageInfo],
            tokens: int | None) -> policy.Plan:
    """``plan`` with its batch cut to its leading whole units within ``tokens``
    (None: as it is)."""
    if tokens is None or plan.batch_tokens <= tokens:
        return plan
    taken = set(plan.batch_ids)
    kept = _leading([m for m in messages if m.id in taken], tokens=tokens)
    return _cut(plan, kept, why=f"what the job's requests carry ({tokens} tokens)")


def _leading(infos: Sequence[policy.MessageInfo], *, messages: int | None = None,
             tokens: int | None = None) -> list[policy.MessageInfo]:
    """The leading whole units (recap.core.planning.policy.units) of ``infos`` within
    ``messages`` messages and ``tokens`` tokens; at least the first unit, so the
    session progresses."""
    kept: list[policy.MessageInfo] = []
    for unit in policy.units(infos):
        if kept and ((messages is not None and len(kept) + len(unit) > messages)
                     or (tokens is not None and sum(m.token_count for m in (*kept, *unit))
                         > tokens)):
            break
        kept.extend(unit)
    return kept


def _cut(plan: policy.Plan, kept: Sequence[policy.MessageInfo], *, why: str) -> policy.Plan:
    """``plan`` condensing ``kept`` (a prefix of its batch), its reason saying ``why``;
    ``plan`` itself when ``kept`` is empty (no units known) or the whole batch."""
    if not kept or len(kept) >= len(plan.batch_ids):
        return plan
    return dataclasses.replace(
        plan, batch_ids=tuple(m.id for m in kept), batch_tokens=sum(m.token_count for m in kept),
        reason=(f"{plan.reason}; {len(kept)} of the {len(plan.batch_ids)} messages planned: "
                f"{why}, the rest is left for the next job"))


def narrowed(claim: Claim, keep: int, *, why: str) -> Claim:
    """``claim`` with its batch cut to the whole units (recap.core.planning.policy.units)
    within its first ``keep`` messages, at least the first unit so the session
    progresses; the rest stays for the next job. The turns, the user's own words, the
    ranking and the brief follow the cut batch, the run's reason says ``why``.
    ``claim`` itself when nothing is cut."""
    taken = set(claim.plan.batch_ids)
    plan = _cut(claim.plan, _leading([m for m in claim.messages if m.id in taken],
                                     messages=keep), why=why)
    if plan is claim.plan:
        return claim
    left = set(plan.batch_ids)
    turns = tuple(t for t in claim.turns if t.id in left)
    users = sum(1 for t in turns if t.role == "user")
    voices = Voices(tuple(v for v in claim.voices.batch if v.id in left),
                    (*(v for v in claim.voices.batch if v.id not in left), *claim.voices.later))
    cut = dataclasses.replace(claim, plan=plan, turns=turns, own_words=claim.own_words[:users],
                              held_before=claim.held_before & left, sent=(), ranked=None)
    return _ranked(cut, voices, {i: b for i, b in claim.results.items() if i in left})


class Refusal(NamedTuple):
    """Why the claim gives the lease back at once: a skipped or a dead run."""

    status: Status
    reason: str


def _judge(session_id: str, row: Any, *, db: Db,
           settings: Settings) -> tuple[Settings, Refusal | None]:
    """The session's effective settings, and why the claim refuses it (None: it
    does not): it waits out a dead-letter, a worker was lost too often holding
    its lease, or its overrides are bad."""
    if row.blocked and dead_lettered_by_claim(session_id, db=db):
        # Only a model's failure may be folded past during a cool-down (the
        # aggressive path, over budget): a worker lost on this session, or bad
        # overrides, waits for the cool-down or `recap retry`.
        return settings, Refusal("skipped", POISON_WAITS)
    dead_reason = None
    if row.lost_leases > settings.max_lost_leases:
        dead_reason = (f"worker lost {row.lost_leases} times in a row while holding this "
                       "session's lease; dead-lettered (recap retry after fixing the cause)")
    try:
        settings = effective(settings, row.overrides)
    except InvalidInput as exc:
        dead_reason = f"{exc} (fix chat_sessions.overrides, then recap retry)"
    return settings, Refusal("dead", dead_reason) if dead_reason else None


def _read_batch(claim: Claim, *, db: Db, model: str
                ) -> tuple[Claim, Voices, dict[int, list[dict[str, Any]]]]:
    """``claim`` with what the later steps read of its batch: the turns (and what
    provenance needs of them), the memories offered to the mining call, and, for the
    retention guard, the run history it decides by; also the batch and the messages
    after it as salience reads them, and the batch's tool results, for
    :func:`_ranked`."""
    session_id, settings, batch_ids = claim.session_id, claim.settings, claim.plan.batch_ids
    # Only mined facts are checked against the user's own words (recap.worker.jobs.retain).
    turns, own, voices, results = _load_turns(session_id, batch_ids, db=db,
                                              own_words=settings.extract_memories,
                                              voices=settings.retention_guard
                                              or _briefed(settings))
    known = (memories_for_prompt(session_id, db=db, limit=KNOWN_MEMORIES,
                                 query="\n".join(t.content for t in turns[-KNOWN_QUERY_TURNS:]))
             if settings.extract_memories else [])
    if results:  # only Recap's own stubs are briefed as stubs
        archived = own_stubs.originals(session_id, list(results), db=db)
        results = {i: as_data(b, archived.get(i)) for i, b in results.items()}
    guarded = settings.retention_guard
    taken = set(batch_ids)
    tenant = tenant_of(session_id)  # how other tenants' folds went never steers this one
    return dataclasses.replace(
        claim, turns=tuple(turns), known=tuple(known), own_words=own,
        recent_repairs=recent_repairs(model, tenant=tenant, db=db) if guarded else (),
        recent_folds=recent_folds(model, tenant=tenant, db=db),
        held_before=(held_before(session_id, [m.id for m in claim.messages if m.id in taken],
                                 db=db) if guarded else frozenset())), voices, results


def _briefed(settings: Settings) -> bool:
    """Whether cleared tool output is sent as its stubs, which needs salience too."""
    return settings.archive_summarized and settings.clear_tool_results


def _ranked(claim: Claim, voices: Voices, results: dict[int, list[dict[str, Any]]]) -> Claim:
    """``claim`` with its batch's specifics ranked by salience (pure, once: the brief
    sent for cleared tool output and the retention guard both use the ranking)."""
    ranked = salience.rank(*voices) if voices.batch else None
    sent = (stubs.brief_turns(claim.turns, results, ranked, count=count_tokens)
            if _briefed(claim.settings) and results and ranked is not None else ())
    return dataclasses.replace(claim, sent=sent, ranked=(ranked if claim.settings.retention_guard
                                                         else None),
                               voices=voices, results=results)


# The longest the sweeper leaves a session alone after no-op runs: once a day an
# unchanged, uncondensable session is looked at again (and audited once).
NOOP_BACKOFF_MAX_S = 86_400.0


def noop_backoff_s(runs: int, *, base_s: float, cap_s: float = NOOP_BACKOFF_MAX_S) -> float:
    """Seconds the sweeper leaves a session alone after ``runs`` no-op runs in a row
    on an unchanged context: ``base_s`` (one sweep interval), doubling, capped."""
    return min(cap_s, base_s * 2 ** min(max(0, runs - 1), 32))


def back_off_noops(session_id: str, *, db: Db, row: Any, now: datetime,
                   base_s: float) -> None:
    """After a run that found nothing to do: the sweeper leaves the session alone
    for :func:`noop_backoff_s`, unless its context changes (a new message, an
    apply, a rewind), so a session at capacity that cannot be condensed costs one
    job and one audit row per back-off period, not one per sweep."""
    context = row.summary_tokens + row.active_tokens
    runs = row.noop_runs + 1 if row.noop_context_tokens == context else 1
    db.execute(update(SESSIONS).where(SESSIONS.c.id == session_id).values(
        noop_runs=runs, noop_context_tokens=context,
        noop_backoff_until=now + timedelta(seconds=noop_backoff_s(runs, base_s=base_s))))


def _take_lease(session_id: str, *, db: Db, token: str, lease_s: int,
                now: datetime | None) -> tuple[Any, datetime] | None:
    """Run the lease UPDATE: its row and the clock it ran on (``now``, else the
    database's: one clock for every worker's lease), or None when it is held.
    On PostgreSQL the UPDATE reads now() itself (the transaction's start, what
    :func:`db_now` reads) and returns it: no round trip of its own."""
    if on_server_clock(db, now):
        row = db.execute(_LEASE_ON_SERVER_CLOCK, {
            "l_sid": session_id, "l_token": token,
            "l_lease": timedelta(seconds=lease_s)}).one_or_none()
        return None if row is None else (row, row.now.astimezone(UTC))
    now = now or db_now(db)
    row = db.execute(_LEASE, {"l_sid": session_id, "l_token": token, "l_now": now,
                              "l_expires": lease_expiry(now, lease_s)}).one_or_none()
    return None if row is None else (row, now)


def _lease_update(clock: Any, expires: Any) -> Update:
    return (take_lease(bindparam("l_sid"), token=bindparam("l_token"), now=clock,
                       expires=expires, clear_pending=True, count_lost=True)
            .returning(SESSIONS.c.summary_version, SESSIONS.c.rolling_summary,
                       SESSIONS.c.summary_tokens, SESSIONS.c.lost_leases,
                       SESSIONS.c.overrides, SESSIONS.c.needs_escalation,
                       SESSIONS.c.normal_blocked, SESSIONS.c.normal_blocked_under,
                       SESSIONS.c.active_tokens, SESSIONS.c.noop_runs,
                       SESSIONS.c.noop_context_tokens,
                       (SESSIONS.c.blocked_until > clock).label("blocked")))


# Built once, with bound parameters: building a statement and its cache key on
# every job cost more CPU than running it.
_LEASE = _lease_update(bindparam("l_now", type_=SESSIONS.c.lease_expires_at.type),
                       bindparam("l_expires"))
_LEASE_ON_SERVER_CLOCK = _lease_update(
    func.now(), func.now() + bindparam("l_lease", type_=Interval())).returning(
        func.now().label("now"))
_TURNS = (select(MESSAGES.c.id, MESSAGES.c.role, MESSAGES.c.content, MESSAGES.c.blocks)
          .where(MESSAGES.c.session_id == bindparam("sid"),
                 MESSAGES.c.id.between(bindparam("lo"), bindparam("hi")))
          .order_by(MESSAGES.c.id))
# The batch's range and every message after it (the window the fold leaves).
_TURNS_FROM = (select(MESSAGES.c.id, MESSAGES.c.role, MESSAGES.c.content, MESSAGES.c.blocks)
               .where(MESSAGES.c.session_id == bindparam("sid"),
                      MESSAGES.c.id >= bindparam("lo"))
               .order_by(MESSAGES.c.id))


def _load_turns(session_id: str, ids: Sequence[int], *, db: Db, own_words: bool,
                voices: bool = False) -> tuple[list[Turn], tuple[str, ...], Voices,
                                                dict[int, list[dict[str, Any]]]]:
    """The batch as the summarizer and the retention guard read it: a block
    message in full (:func:`recap.core.content.render.full_text`), not its stored
    rendering, which cuts long tool results and documents to their ends; the
    guard must require the specifics of every line that the apply deletes. With
    ``own_words``, what the user typed in each user turn (:func:`own_text`). With
    ``voices``, the batch and every message after it as salience reads them. Last,
    the content arrays of the batch's messages that hold tool results, by id."""
    wanted = set(ids)
    rows = db.execute(_TURNS_FROM if voices else _TURNS,
                      {"sid": session_id, "lo": min(wanted), "hi": max(wanted)}
                      ).yield_per(500)
    turns: list[Turn] = []
    own: list[str] = []
    batch: list[Voice] = []
    later: list[Voice] = []
    results: dict[int, list[dict[str, Any]]] = {}
    for i, role, content, blocks in rows:
        text = full_text(blocks) if blocks else content
        if i in wanted:
            turns.append(Turn(i, role, text))
            if blocks and any(b.get("type") == "tool_result" for b in blocks):
                results[i] = blocks
            if own_words and role == "user":
                own.append(typed_words(own_text(role, content, blocks)))
        if voices and (i in wanted or i > max(wanted)):
            (batch if i in wanted else later).append(voice(i, role, content, blocks, text))
    return turns, tuple(own), Voices(tuple(batch), tuple(later)), results


def voice(i: int, role: str, content: str, blocks: list[dict[str, Any]] | None,
          text: str) -> Voice:
    """A stored message as salience reads it (``text``: its full rendering)."""
    tool = bool(blocks) and all(b.get("type") == "tool_result" for b in blocks or ())
    return Voice(i, role, text,
                 typed_words(own_text(role, content, blocks)) if role == "user" else None,
                 tool)
