"""With RECAP_RECALL_TOOL set, the stubs a clear writes say to call that tool with
the result's tool_use_id, and calling it with that id gives the original back."""

from __future__ import annotations

from collections.abc import Callable

import recap
from recap.core.retention.stubs import STUB_TAIL, is_stub
from recap.worker.jobs.outcome import Job
from recap.worker.jobs.resources import get_resources
from recap.worker.jobs.summarize import summarize
from tests.jobs.test_clear_tool_results import QUIET, TASKS, agent_session, log, stored


def test_stubs_name_the_recall_tool_and_its_id_brings_the_original_back(
        settings_env: Callable[..., None]) -> None:
    settings_env(**QUIET, RECAP_RECALL_TOOL="recap_recall")
    sid = "clear-tool-named"
    agent_session(sid)
    summarize(sid, job=Job(task_id="t-clear-tool"), res=get_resources())
    results = [b[0] for _, b, _ in stored(sid) if b and b[0]["type"] == "tool_result"]
    cleared = [b for b in results if is_stub(b["content"])]
    assert len(cleared) == TASKS - 1
    for b in cleared:
        assert b["content"].endswith(f"; the full text is in the archive: call recap_recall "
                                     f"with tool_use_id {b['tool_use_id']} to recall it]")
        assert STUB_TAIL not in b["content"]
    text = recap.recall_tool(sid, {"tool_use_id": cleared[0]["tool_use_id"]},
                             max_tokens=20_000)
    assert "- [tool result · message " in text
    assert all(line in text for line in log(0).split("\n")[:5])


def test_without_the_setting_stubs_say_to_name_an_identifier(
        settings_env: Callable[..., None]) -> None:
    settings_env(**QUIET)
    sid = "clear-tool-unnamed"
    agent_session(sid)
    summarize(sid, job=Job(task_id="t-clear-plain"), res=get_resources())
    cleared = [b[0]["content"] for _, b, _ in stored(sid)
               if b and b[0]["type"] == "tool_result" and is_stub(b[0]["content"])]
    assert cleared and all(c.endswith(STUB_TAIL) for c in cleared)
