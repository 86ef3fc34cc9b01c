"""README.md's and docs/**/*.md's code blocks: every block marked ``runs`` runs
verbatim (extracted from the Markdown here, never copied) against the test
environment, and every block that looks runnable is marked one way or the other
(tests/docs/blocks.py has the convention). docs/INTEGRATIONS.md's examples run in
tests/integrations/test_docs_examples.py, which also checks what they store."""

from __future__ import annotations

import ast
import asyncio
import inspect
import os
import subprocess
from typing import Any

import pytest

from tests.docs.blocks import ROOT, Block, all_blocks
from tests.integrations.common import drain

pytestmark = pytest.mark.usefixtures("celery_worker_thread")
# Run with their own assertions (what each example stores).
ASSERTED_ELSEWHERE = {ROOT / "docs" / "INTEGRATIONS.md"}


def chains() -> list[list[Block]]:
    """The blocks to run, each ``runs`` block with the ``runs after`` blocks that
    continue it."""
    out: list[list[Block]] = []
    for block in all_blocks():
        if block.marker == "runs":
            out.append([block])
        elif block.marker == "after":
            assert out and out[-1][0].path == block.path, f"{block.name}: nothing above to follow"
            out[-1].append(block)
    return out


def run(block: Block, namespace: dict[str, Any]) -> None:
    if block.lang == "python":
        code = compile(block.code, block.name, "exec", flags=ast.PyCF_ALLOW_TOP_LEVEL_AWAIT)
        result = eval(code, namespace)  # the docs' own code
        if inspect.iscoroutine(result):
            asyncio.run(result)
        return
    done = subprocess.run(["bash", "-euo", "pipefail", "-c", block.code], env=dict(os.environ),
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, f"{block.name} failed:\n{done.stdout}\n{done.stderr}"


@pytest.mark.parametrize("chain", [c for c in chains() if c[0].path not in ASSERTED_ELSEWHERE],
                         ids=lambda c: c[0].name)
def test_each_block_marked_runs_runs_verbatim(chain: list[Block]) -> None:
    namespace: dict[str, Any] = {"__name__": "docs"}
    for block in chain:
        run(block, namespace)
    drain()


def test_every_block_that_looks_runnable_is_marked_runs_or_not_run() -> None:
    found = all_blocks()
    unmarked = [b.name for b in found if b.looks_runnable and b.marker is None]
    assert not unmarked, ("mark each with <!-- runs --> or <!-- not run: REASON --> on the "
                          f"line above its fence: {unmarked}")
    assert not [b.name for b in found if b.marker == "not run" and not b.reason]
    assert not [b.name for b in found if b.marker in ("runs", "after")
                and b.lang not in ("python", "bash")], "only python and bash blocks run"
    assert any(b.marker == "runs" for b in found)
