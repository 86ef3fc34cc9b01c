"""examples/http/chat.mjs (Node, fetch only) against a live ``recap serve``, the
stand-in Messages API and a worker: a dozen turns, a summary, no turn stored twice."""

from __future__ import annotations

import shutil
import subprocess

import pytest

from tests.env import API_KEY, FAKE, ROOT, TEST_ENV
from tests.helpers import (
    assert_invariants,
    join_worker,
    require,
    sentence,
    session_row,
    wait_for,
)
from tests.http.server import Server

pytestmark = pytest.mark.system

SID = "http-node"
TURNS = 12


def test_the_node_chat_loop(server: Server, celery_worker_thread: object, low: None) -> None:
    node = shutil.which("node")
    require(node, "node is not installed: examples/http/chat.mjs needs Node 18+")
    assert node is not None
    lines = "\n".join(sentence(i, 30) for i in range(TURNS)) + "\n"
    done = subprocess.run(
        [node, str(ROOT / "examples" / "http" / "chat.mjs"), SID], input=lines, text=True,
        capture_output=True, timeout=240,
        env={"PATH": "/usr/bin:/bin", "RECAP_URL": server.url, "RECAP_API_KEY": server.keys[0],
             "ANTHROPIC_BASE_URL": FAKE.url, "ANTHROPIC_API_KEY": API_KEY})
    assert done.returncode == 0, done.stderr
    out = done.stdout.splitlines()
    assert sum(line.startswith("assistant: ") for line in out) == TURNS
    assert out[-1].startswith(f"session {SID}: ")
    chats = [r for r in FAKE.requests if "concise, friendly assistant" in str(r.get("system"))]
    assert len(chats) == TURNS
    assert all(r["model"] and r["max_tokens"] == 1024 for r in chats)
    wait_for(lambda: (row := session_row(SID)) is not None and row.summary_version >= 1,
             timeout=60, what="a summary of the Node conversation")
    # A later turn's job may still hold the session: the invariants hold once idle.
    join_worker(TEST_ENV["RECAP_QUEUE"])
    row = session_row(SID)
    assert row is not None
    assert row.summarized_message_count + row.message_count == 2 * TURNS  # none twice
    assert_invariants({})
