"""``Idempotency-Key``: a retried request gets the first answer and stores nothing new.

The key's row is written in the same transaction as the messages, first as a
claim (status 0) and then with the answer, so a committed key always means
committed messages and a rolled-back request leaves no key behind. Two requests
with one key at once: the second's INSERT waits on the first's uncommitted row
(PostgreSQL's unique index), then reads its answer. Keys live
RECAP_API_IDEMPOTENCY_TTL_S; expired ones are purged by later requests, and a
session's go when it is forgotten (recap.forget).
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from sqlalchemy import delete, select, update
from sqlalchemy.orm import Session

from recap.db import insert_ignoring_duplicates
from recap.http.errors import ApiError
from recap.models import IdempotencyKey

MAX_KEY_CHARS = 255
# Expired keys purged by each request that brings a key: enough to keep up with
# the keys written, few enough to stay cheap.
PURGE_BATCH = 100
_CLAIMED = 0


@dataclass(frozen=True)
class Reply:
    """A stored answer."""

    status: int
    body: dict[str, Any]


def check_key(raw: str) -> str:
    """``raw`` if it is a usable key (1 to 255 printable ASCII characters), else 400."""
    if not 0 < len(raw) <= MAX_KEY_CHARS or not all(" " < c <= "~" for c in raw):
        raise ApiError(400, "invalid_idempotency_key",
                       f"Idempotency-Key must be 1 to {MAX_KEY_CHARS} printable ASCII characters "
                       "without spaces (a UUID is a good key)")
    return raw


def fingerprint(session_id: str, body: dict[str, Any]) -> str:
    """What makes two requests the same: the session and the body, canonically."""
    canonical = json.dumps([session_id, body], sort_keys=True, separators=(",", ":"),
                           ensure_ascii=False)
    return hashlib.sha256(canonical.encode()).hexdigest()


def stored_key(key: str, tenant: str | None) -> str:
    """The row's key: ``key`` itself, or for a tenant's key a digest of both, so one
    tenant's keys never meet another's (a reused key would say one was used)."""
    if tenant is None:
        return key
    return "t:" + hashlib.sha256(json.dumps([tenant, key]).encode()).hexdigest()


def claim(key: str, fp: str, *, session_id: str, db: Session, now: datetime,
          ttl_s: int) -> Reply | None:
    """Claim ``key`` in ``db``'s transaction: None if this request goes ahead (then
    :func:`record` its answer before commit), else the first request's answer.

    Raises ApiError 422 when the key came with another request body.
    """
    db.execute(delete(IdempotencyKey).where(IdempotencyKey.key == key,
                                            IdempotencyKey.expires_at <= now))
    expired = (select(IdempotencyKey.key).where(IdempotencyKey.expires_at <= now)
               .limit(PURGE_BATCH)
               # Rows another request is purging are left to it (no waiting, no deadlock).
               .with_for_update(skip_locked=True).scalar_subquery())
    db.execute(delete(IdempotencyKey).where(IdempotencyKey.key.in_(expired)))
    insert_ignoring_duplicates(IdempotencyKey, [{
        "key": key, "fingerprint": fp, "session_id": session_id, "status": _CLAIMED,
        "response": "",
        "created_at": now, "expires_at": now + timedelta(seconds=ttl_s)}], db=db, keys=["key"])
    # Another request's row is visible only once committed, with its answer: a
    # claimed row seen here is this request's own.
    row = db.execute(select(IdempotencyKey.fingerprint, IdempotencyKey.status,
                            IdempotencyKey.response)
                     .where(IdempotencyKey.key == key)).one()
    if row.status == _CLAIMED:
        return None
    if row.fingerprint != fp:
        raise ApiError(422, "idempotency_key_reused",
                       "this Idempotency-Key was used with another request (another session "
                       "or body); use a new key for a new request")
    return Reply(row.status, json.loads(row.response))


def record(key: str, reply: Reply, *, db: Session) -> None:
    """Store the answer of the request that claimed ``key`` (same transaction)."""
    db.execute(update(IdempotencyKey).where(IdempotencyKey.key == key).values(
        status=reply.status, response=json.dumps(reply.body)))
