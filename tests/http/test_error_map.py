"""The pure pieces of the front door: which status each error gets, the key check and
its tenants, the Host rules and the path ids are routed on."""

from __future__ import annotations

import pytest
from sqlalchemy.exc import IntegrityError, OperationalError, ProgrammingError

from recap.errors import (
    BrokerUnavailable,
    ConfigError,
    DatabaseNotReady,
    InvalidInput,
    SessionBusy,
    SessionNotFound,
    Superseded,
    UserNotFound,
)
from recap.http.errors import classify
from recap.http.guard import ApiKey, matching_key, parse_keys
from recap.http.hosts import LOOPBACK_NAMES, allowed, host_name, origin_allowed, parse_hosts
from recap.http.ids import IdConvertor, routed_path

pytestmark = pytest.mark.unit


class _Orig(Exception):
    pass


@pytest.mark.parametrize(("exc", "status", "type_"), [
    (InvalidInput("role: unknown"), 422, "invalid_input"),
    (SessionNotFound("no chat session"), 404, "not_found"),
    (UserNotFound("no user"), 404, "not_found"),
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
    keys = parse_keys(" new-key , old-key ,, acme-key:acme, k:v:globex")
    assert keys == (ApiKey(b"new-key"), ApiKey(b"old-key"), ApiKey(b"acme-key", "acme"),
                    ApiKey(b"k:v", "globex"))
    assert matching_key(b"old-key", keys) == ApiKey(b"old-key")
    assert matching_key(b"acme-key", keys) == ApiKey(b"acme-key", "acme")
    assert not any(matching_key(k, keys) for k in (b"", b"new-ke", b"new-key ", b"NEW-KEY",
                                                    b"acme-key:acme"))
    assert parse_keys("") == () and parse_keys(" , ") == ()
    for bad in ("s3cret:", "s3cret:a/b", ":acme", "s3cret:..", "s3cret:" + "t" * 65):
        with pytest.raises(ConfigError, match="RECAP_API_KEYS: entry 2") as info:
            parse_keys("other," + bad)
        assert "s3cret" not in str(info.value)  # the message never quotes a key


def test_hosts() -> None:
    assert [host_name(h) for h in ("Example.COM:8000", "[::1]:80", "::1", "localhost.",
                                   "")] == ["example.com", "::1", "::1", "localhost", ""]
    assert all(allowed(h, LOOPBACK_NAMES) for h in ("localhost", "a.localhost", "127.0.0.1",
                                                    "::1"))
    assert not any(allowed(h, LOOPBACK_NAMES) for h in ("localhost.evil", "127.0.0.2.nip.io",
                                                        "evillocalhost", ""))
    names = parse_hosts(" API.example.com , *.internal ,, [::1] ")
    assert names == ("api.example.com", "*.internal", "::1")
    assert origin_allowed("https://api.example.com:8443", names)
    assert not any(origin_allowed(o, names) for o in ("null", "file://", "http://internal",
                                                      "http://[", "ftp://api.example.com"))
    for bad in ("http://x.com", "x.com:80", "a b", "*"):
        with pytest.raises(ConfigError, match="RECAP_API_ALLOWED_HOSTS"):
            parse_hosts(bad)


def test_an_id_stays_one_segment() -> None:
    convert = IdConvertor().convert
    path = routed_path(b"/v1/sessions/tenant%2F42/messages")
    assert path == "/v1/sessions/tenant%2F42/messages"
    assert convert(path.split("/")[3]) == "tenant/42"
    for sid in ("50%off", "a%2Fb", "%25/%", "x/memories", "é"):
        encoded = "".join(f"%{b:02X}" for b in sid.encode())
        segment = routed_path(f"/v1/sessions/{encoded}".encode()).split("/")[3]
        assert convert(segment) == sid
    assert routed_path(b"/healthz") == "/healthz"
