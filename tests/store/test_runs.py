"""What a claim reads back of earlier runs (recap.store.runs): a model's latest folds
and repairs, per tenant, so no tenant's folds steer another tenant's."""

from __future__ import annotations

import pytest

from recap import add_message
from recap.core.planning import resends
from recap.core.tenant import tenant_of
from recap.db import transaction
from recap.store.runs import RunRecord, recent_folds, recent_repairs, record_run
from tests.jobs.test_sqlite import sqlite_url

__all__ = ["sqlite_url"]  # the fixture, used by name below

MODEL = "claude-test-model"


def folded(session_id: str, *, extractive: bool, model: str = MODEL) -> None:
    with transaction() as s:
        record_run(RunRecord(session_id=session_id, status="applied", reason="test fold",
                             model=model, fallback=extractive, resends=2 if extractive else 0),
                   db=s)


@pytest.mark.unit
@pytest.mark.parametrize(("some_id", "tenant"), [
    ("acme/42", "acme"), ("acme/projects/p1", "acme"), ("plain", None), ("/x", ""),
    ("a_c/1", "a_c"),
])
def test_tenant_of_is_the_first_path_segment(some_id: str, tenant: str | None) -> None:
    assert tenant_of(some_id) == tenant


@pytest.fixture(params=["postgresql", "sqlite"])
def dialect(request: pytest.FixtureRequest) -> str:
    """Each test on PostgreSQL, then on a fresh SQLite file."""
    if request.param == "sqlite":
        request.getfixturevalue("sqlite_url")
    return str(request.param)


def test_each_tenant_reads_only_its_own_folds(dialect: str) -> None:
    sids = ("abc/1", "a_c/1", "a%c/1", "plain", "abc/2", "ABC/1")
    for sid in sids:
        add_message(sid, "user", "Book the Lisbon hotel")
    for _ in range(resends.FALLBACK_STREAK):
        folded("abc/1", extractive=True)  # "_" and "%" are no wildcards here
    folded("a_c/1", extractive=False)
    folded("abc/2", extractive=True, model="another-model")
    with transaction() as s:
        assert recent_folds(MODEL, tenant="abc", db=s) == (
            (resends.FoldOutcome(True, 2),) * resends.FALLBACK_STREAK)
        assert recent_folds(MODEL, tenant="a_c", db=s) == (resends.FoldOutcome(False, 0),)
        assert recent_folds(MODEL, tenant="a%c", db=s) == ()
        assert recent_folds(MODEL, tenant="ABC", db=s) == ()  # another tenant's case
        assert recent_folds(MODEL, tenant=None, db=s) == ()  # ids without a tenant
        assert recent_repairs(MODEL, tenant="a_c", db=s) == ()
    folded("plain", extractive=True)
    with transaction() as s:
        assert recent_folds(MODEL, tenant=None, db=s) == (resends.FoldOutcome(True, 2),)
        assert len(recent_folds(MODEL, tenant="abc", db=s)) == resends.FALLBACK_STREAK
