"""What one tenant sends never changes how another tenant's sessions are folded,
through ``recap serve`` with two tenants' keys: a tenant whose content no model
can fold gets its own resends withheld (recap.core.planning.resends), another
tenant's folds on the same model keep theirs, and each session's shown reason
describes only its own tenant's folds."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from urllib.parse import quote

import httpx
import pytest

from recap.core.planning import resends
from recap.testing import FakeAnthropic, Reply, Request, ok, recap_kind
from tests.helpers import sentence, wait_for
from tests.http.conftest import SERVER_ENV
from tests.http.server import Server
from tests.jobs.test_scenarios import idle

pytestmark = [pytest.mark.system, pytest.mark.usefixtures("celery_worker_thread", "low")]

ACME, GLOBEX = "acme-key", "globex-key"
# Only acme's messages say it: the route below answers the requests carrying it.
UNFOLDABLE = "ACME-UNFOLDABLE"


@pytest.fixture(scope="module")
def tenants(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    srv = Server(log_dir=Path(tmp_path_factory.mktemp("tenants")), env=SERVER_ENV,
                 keys=("admin-key", f"{ACME}:acme", f"{GLOBEX}:globex")).start()
    try:
        yield srv
    finally:
        srv.stop()


def unusable_for_acme(request: Request) -> Reply | None:
    """No summary any way for a summary request of acme's messages: a tool answer
    without one, a plain answer cut off at its cap."""
    if recap_kind(request.body) != "summary" or not request.mentions(UNFOLDABLE):
        return None
    if request.tool == "record_summary":
        return ok(json.dumps({"facts": []}))
    return ok("The user and the assistant talked about", stop_reason="max_tokens")


def fold(client: httpx.Client, sid: str, *, marker: str = "") -> dict[str, Any]:
    """Write a conversation to ``sid`` over HTTP, send the reply hook, wait for its
    folds to settle; the session as GET /v1/sessions/{id} shows it."""
    path = f"/v1/sessions/{quote(sid, safe='')}"
    messages = [{"role": "user" if i % 2 == 0 else "assistant",
                 "content": f"{sentence(i, 30)} {marker}".strip()} for i in range(12)]
    r = client.post(f"{path}/messages", json={"messages": messages})
    assert r.status_code == 201, r.text
    assert client.post(f"{path}/replied").status_code == 202
    wait_for(lambda: client.get(path).json()["last_fold"] is not None and idle(sid),
             timeout=60, what=f"{sid}'s folds")
    session: dict[str, Any] = client.get(path).json()
    return session


def test_one_tenants_unfoldable_content_never_withholds_another_tenants_resends(
        tenants: Server, fake_api: FakeAnthropic) -> None:
    fake_api.route(unusable_for_acme)
    with tenants.client(ACME) as acme, tenants.client(GLOBEX) as globex:
        for i in range(resends.FALLBACK_STREAK):
            shown = fold(acme, f"acme/s{i}", marker=UNFOLDABLE)["last_fold"]
            assert shown["outcome"] == "applied", shown
            assert "kept extractively" in shown["reason"], shown
        # acme's own next fold is asked once, and its reason names acme's folds.
        shown = fold(acme, "acme/next", marker=UNFOLDABLE)["last_fold"]
        assert "resends withheld: the model's last" in shown["reason"], shown
        assert "of tenant 'acme''s sessions" in shown["reason"], shown

        # globex, on the same model and worker: its resends are its own.
        shown = fold(globex, "globex/s1")["last_fold"]
        assert shown["outcome"] == "applied", shown
        assert "resends withheld" not in shown["reason"], shown
        assert "kept extractively" not in shown["reason"], shown
        assert "acme" not in shown["reason"], shown
