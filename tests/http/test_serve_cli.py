"""``recap serve`` refuses to start without keys (unless --no-auth on loopback), and
docs/openapi.json is the app's schema, with the bearer key declared."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest

from recap.cli.serve import is_loopback, openapi_json
from recap.http.openapi import BEARER, SCHEME
from tests.env import ROOT
from tests.http.server import RECAP, Server

pytestmark = pytest.mark.system


def _serve(*args: str, keys: str = "") -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "RECAP_API_KEYS": keys}
    return subprocess.run([RECAP, "serve", *args], env=env, capture_output=True, text=True,
                          timeout=60)


@pytest.mark.parametrize(("args", "why"), [
    ((), "RECAP_API_KEYS is not set"),
    (("--no-auth", "--host", "0.0.0.0"), "refusing --no-auth on 0.0.0.0"),
    (("--no-auth", "--host", "10.1.2.3"), "refusing --no-auth on 10.1.2.3"),
])
def test_refuses_to_start_without_keys(args: tuple[str, ...], why: str) -> None:
    done = _serve(*args)
    assert done.returncode == 2
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and why in lines[0]


def test_blank_keys_are_no_keys() -> None:
    done = _serve(keys=" , ")
    assert done.returncode == 2 and "RECAP_API_KEYS is not set" in done.stderr


def test_no_auth_on_loopback_serves_without_a_key(tmp_path: Path) -> None:
    srv = Server(log_dir=tmp_path, args=["--no-auth"], keys=()).start()
    try:
        with srv.client("") as anon:
            assert anon.get("/v1/sessions/nobody").status_code == 404
        assert "--no-auth" in srv.logged()
    finally:
        srv.stop()


def test_loopback() -> None:
    assert all(map(is_loopback, ("127.0.0.1", "::1", "[::1]", "localhost", "127.8.0.1")))
    assert not any(map(is_loopback, ("0.0.0.0", "::", "10.0.0.1", "example.com")))


def test_docs_openapi_json_is_the_apps_schema() -> None:
    committed = (ROOT / "docs" / "openapi.json").read_text()
    assert committed == openapi_json(), (
        "docs/openapi.json is stale: recap serve --print-openapi > docs/openapi.json")


def test_the_schema_declares_the_bearer_key_where_the_guard_asks_for_it() -> None:
    schema = json.loads(openapi_json())
    assert schema["components"]["securitySchemes"] == {
        SCHEME: {"type": "http", "scheme": "bearer", "description": BEARER["description"]}}
    ops = [(path, op) for path, by_method in schema["paths"].items()
           for op in by_method.values()]
    assert len(ops) > 10
    for path, op in ops:
        keyed = path != "/healthz"
        assert ("401" in op["responses"]) == keyed, path
        assert op.get("security") == ([{SCHEME: []}] if keyed else None), path
