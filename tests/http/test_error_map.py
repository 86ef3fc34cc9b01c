"""The pure pieces of the front door: which status each error gets, and the key check."""

from __future__ import annotations

import pytest
from sqlalchemy.exc import IntegrityError, OperationalError, ProgrammingError

from recap.errors import (
    BrokerUnavailable,
    DatabaseNotReady,
    InvalidInput,
    SessionBusy,
    SessionNotFound,
    Superseded,
)
from recap.http.errors import classify
from recap.http.guard import key_matches, parse_keys


class _Orig(Exception):
    pass


@pytest.mark.parametrize(("exc", "status", "type_"), [
    (InvalidInput("role: unknown"), 422, "invalid_input"),
    (SessionNotFound("no chat session"), 404, "not_found"),
    (SessionBusy("retry"), 409, "session_busy"),
    (BrokerUnavailable("down"), 503, "broker_unavailable"),
    (Superseded("moved"), 503, "unavailable"),
    (OperationalError("SELECT 1", {}, _Orig("connection refused")), 503,
     "database_unavailable"),
    (ProgrammingError("SELECT", {}, _Orig('relation "chat_sessions" does not exist')), 503,
     "database_not_migrated"),
    (DatabaseNotReady("database ... is unreachable (refused): ...", unreachable=True), 503,
     "database_unavailable"),
    (DatabaseNotReady("database ... has no Recap tables: run `recap db upgrade`"), 503,
     "database_not_migrated"),
])
def test_each_error_has_its_status(exc: Exception, status: int, type_: str) -> None:
    found = classify(exc)
    assert found is not None and (found.status, found.type) == (status, type_)
    assert ("Retry-After" in found.headers) == (status in (409,) or
                                                type_ == "database_unavailable" or
                                                isinstance(exc, DatabaseNotReady))


def test_a_database_bug_is_not_called_an_outage() -> None:
    assert classify(IntegrityError("INSERT", {}, _Orig("duplicate key"))) is None
    assert classify(ProgrammingError("SELECT", {}, _Orig("syntax error"))) is None
    assert classify(RuntimeError("boom")) is None


def test_keys() -> None:
    keys = parse_keys(" new-key , old-key ,, ")
    assert keys == (b"new-key", b"old-key")
    assert key_matches(b"old-key", keys) and key_matches(b"new-key", keys)
    assert not any(key_matches(k, keys) for k in (b"", b"new-ke", b"new-key ", b"NEW-KEY"))
    assert parse_keys("") == () and parse_keys(" , ") == ()
