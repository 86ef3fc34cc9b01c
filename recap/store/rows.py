"""Row helpers for the jobs' transactions.

Each takes the chat session's id first and the database session as ``db=``
(keyword-only), and never commits: the job functions own the transactions.
"""

from __future__ import annotations

from collections.abc import Sequence

from sqlalchemy import (
    BigInteger,
    ColumnElement,
    bindparam,
    case,
    delete,
    exists,
    func,
    insert,
    literal,
    null,
    select,
    update,
)

from recap.core.content.render import full_text
from recap.core.memories.facts import Fact, may_replace
from recap.db import Db, dialect_name, insert_or_update, rowcount
from recap.models import SOURCE_KINDS, ArchivedMessage, Memory, MemorySource
from recap.models import messages_table as MESSAGES
from recap.models import sessions_table as SESSIONS
from recap.models import versions_table as VERSIONS
from recap.store.recall import session_scopes
from recap.store.search import MAX_INDEXED_CHARS, needs_terms, search_terms
from recap.store.sentences import holding_memory
from recap.store.sources import add_source


def session_exists(session_id: str, *, db: Db) -> bool:
    """Whether the session is stored, holding a key-share lock on its row until the
    transaction ends: recap.forget (which locks the row for update first) then
    cannot erase the session between this check and what the caller writes."""
    return db.execute(select(SESSIONS.c.id).where(SESSIONS.c.id == session_id)
                      .with_for_update(key_share=True)).first() is not None


def save_memories(session_id: str, facts: Sequence[Fact], *, db: Db, first_id: int,
                  last_id: int, run_id: int | None = None) -> list[int]:
    """Store facts mined from messages first_id..last_id; returns their memory ids.

    A fact whose ``source`` is ``user`` (the user's own words, as the job
    attributed it) goes to the session's scope: its user's when the session names
    one (shared by all the user's sessions), else the session's. Any other fact
    (tool results, documents, assistant turns, unverified claims, the guard's)
    stays in the session's own scope. A fact already in the scope stays one row
    and gains a source (recap.store.sources): it goes only when its last source
    goes; said again after it was superseded, it is live again. So does a guard
    entry whose sentence a live memory of the scope already states under another
    key (recap.store.sentences): the sentence holds both keys. A fact whose
    ``replaces`` names a live memory it may replace (a user fact: its user's or
    the session's; any other: the session's only, and never one the user stated)
    marks that memory
    ``superseded_by`` the fact's row (kept for audit, never shown) if the fact keeps
    every specific of that memory (recap.core.memories.facts.may_replace), else both
    stay live; an id of another scope, or of the fact itself, is ignored: the
    model is not trusted.
    """
    readable = session_scopes(session_id, db=db)
    own = f"s:{session_id}"
    saved: list[int] = []
    sourced: set[tuple[int, str]] = set()
    for f in facts:
        kind = f.source if f.source in SOURCE_KINDS else "unverified"
        user = kind == "user"
        scope = readable[0] if user else own
        new_id = holding_memory(scope, f.fact, db=db)
        if new_id is None:
            insert_or_update(Memory, {
                "session_id": session_id, "scope": scope, "fact": f.fact,
                "fact_hash": f.digest, "category": f.category, "importance": f.importance,
                "first_message_id": first_id, "last_message_id": last_id},
                db=db, keys=("scope", "fact_hash"), changes={"superseded_by": None})
            new_id = int(db.execute(select(Memory.id).where(
                Memory.scope == scope, Memory.fact_hash == f.digest)).scalar_one())
        if (new_id, kind) not in sourced:  # one sentence under two keys: one source
            sourced.add((new_id, kind))
            add_source(new_id, db=db, session_id=session_id, kind=kind, first_id=first_id,
                       last_id=last_id, run_id=run_id)
        if f.replaces is not None and f.replaces != new_id:
            live: list[ColumnElement[bool]] = [
                Memory.id == f.replaces, Memory.scope.in_(readable if user else (own,)),
                Memory.superseded_by.is_(None)]
            if not user:  # what the user stated is replaced only by what they state
                live.append(~exists().where(MemorySource.memory_id == Memory.id,
                                            MemorySource.kind == "user"))
            old = db.scalar(select(Memory.fact).where(*live))
            if old is not None and may_replace(old, f.fact):
                db.execute(update(Memory).where(*live).values(superseded_by=new_id))
        saved.append(new_id)
    return saved


def archive_messages(session_id: str, ids: Sequence[int], *, db: Db, run_id: int) -> int:
    """Copy the batch into archived_messages (same transaction as its delete). A
    message the archive already holds keeps its first copy: that is its original
    (a tool result cleared from the window, recap.worker.jobs.clear, is archived
    whole before its stub replaces it); the copy now belongs to ``run_id``, the
    run that condensed it (what a rewind restores by). On PostgreSQL a message too
    long for a tsvector gets ``search_terms`` (recap.store.search), what the recall
    index reads instead of its text; the text is kept whole."""
    held = set(db.scalars(select(ArchivedMessage.id).where(
        ArchivedMessage.session_id == session_id, ArchivedMessage.id.in_(ids))))
    if held:
        db.execute(update(ArchivedMessage).where(ArchivedMessage.id.in_(held))
                   .values(run_id=run_id))
    ids = [i for i in ids if i not in held]
    if not ids:
        return len(held)
    indexed = dialect_name(db) == "postgresql"
    # Recall searches a content array's whole rendering: content cuts long tool results.
    texts = [{"b_id": i, "b_text": (body := full_text(blocks)),
              "b_terms": search_terms(body) if indexed and needs_terms(body) else None}
             for i, blocks in db.execute(select(MESSAGES.c.id, MESSAGES.c.blocks).where(
                 MESSAGES.c.session_id == session_id, MESSAGES.c.id.in_(ids),
                 MESSAGES.c.blocks.isnot(None)))]
    long = [{"b_id": i, "b_terms": search_terms(content)} for i, content in db.execute(
        select(MESSAGES.c.id, MESSAGES.c.content).where(
            MESSAGES.c.session_id == session_id, MESSAGES.c.id.in_(ids),
            MESSAGES.c.blocks.is_(None),
            func.char_length(MESSAGES.c.content) > MAX_INDEXED_CHARS))] if indexed else []
    cols = (MESSAGES.c.id, MESSAGES.c.session_id, MESSAGES.c.role, MESSAGES.c.content,
            MESSAGES.c.token_count, MESSAGES.c.pinned, MESSAGES.c.created_at,
            MESSAGES.c.blocks, MESSAGES.c.tool_links)
    # A row too long to index whole is inserted with empty terms (PostgreSQL's index
    # could not hold its content), then given its own below.
    terms = (case((func.char_length(MESSAGES.c.content) > MAX_INDEXED_CHARS, ""),
                  else_=null()) if indexed else null())
    source = select(*cols, literal(run_id, BigInteger()), terms).where(
        MESSAGES.c.session_id == session_id, MESSAGES.c.id.in_(ids))
    copied = rowcount(db.execute(insert(ArchivedMessage).from_select(
        ["id", "session_id", "role", "content", "token_count", "pinned", "created_at",
         "blocks", "tool_links", "run_id", "search_terms"], source)))
    if texts:  # the full rendering and, when it is too long, its terms: one write
        db.execute(_SEARCH_TEXT, texts)
    if long:
        db.execute(_SEARCH_TERMS, long)
    return copied + len(held)


_SEARCH_TEXT = (update(ArchivedMessage).where(ArchivedMessage.id == bindparam("b_id"))
                .values(search_text=bindparam("b_text"), search_terms=bindparam("b_terms")))
_SEARCH_TERMS = (update(ArchivedMessage).where(ArchivedMessage.id == bindparam("b_id"))
                 .values(search_terms=bindparam("b_terms")))


# Built once, with bound parameters: building an INSERT and its cache key costs a
# job more CPU than sending it.
_VERSION_INSERT = insert(VERSIONS).values(
    {k: bindparam(f"v_{k}", type_=VERSIONS.c[k].type)
     for k in ("session_id", "version", "text", "tokens", "covers_through", "run_id")})


def save_summary_version(session_id: str, *, db: Db, version: int, text: str | None,
                         tokens: int, covers_through: int | None, run_id: int | None,
                         keep: int) -> None:
    """Keep the summary of ``version`` (summary_versions) and prune to the newest
    ``keep`` (RECAP_SUMMARY_VERSIONS_KEEP: -1 all, 0 none). No summary, no row."""
    if keep != 0 and text:
        db.execute(_VERSION_INSERT, {"v_session_id": session_id, "v_version": version,
                                     "v_text": text, "v_tokens": tokens,
                                     "v_covers_through": covers_through, "v_run_id": run_id})
    if keep >= 0:
        db.execute(delete(VERSIONS).where(VERSIONS.c.session_id == session_id,
                                          VERSIONS.c.version <= version - keep))
