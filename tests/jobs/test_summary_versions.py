"""Summary versions: every applied run keeps its summary; history, summary_at,
retention (keep all / keep N / none), and ``recap history``."""

from __future__ import annotations

from collections.abc import Callable

import pytest

from recap import summary_at
from recap.cli import main
from recap.errors import InvalidInput, SessionNotFound
from recap.sessions.history import history
from recap.testing import FakeAnthropic, ok
from recap.worker.jobs.outcome import Job
from recap.worker.jobs.resources import get_resources
from recap.worker.jobs.summarize import summarize
from tests.helpers import LOW, runs, seed

# Words each update brings: a summary that repeats the previous one's words and adds
# none is refused as frozen (recap.core.prompts.frozen).
NEW = ("alpha bravo charlie", "delta echo foxtrot", "golf hotel india")


def fold(sid: str, n: int, fake_api: FakeAnthropic) -> None:
    for k in range(n):
        fake_api.script(ok(f"Summary number {k + 1} of {sid} ({NEW[k]})."))
        assert summarize(sid, job=Job(task_id=f"{sid}-{k}"), res=get_resources(),
                         force=True).status == "applied"


def test_every_applied_run_keeps_its_summary(
        fake_api: FakeAnthropic, settings_env: Callable[..., None],
        capsys: pytest.CaptureFixture[str]) -> None:
    settings_env(**LOW)
    seed("versions", 20)
    fold("versions", 3, fake_api)
    kept = history("versions")
    applied = runs("versions")
    assert [v.version for v in kept] == [1, 2, 3]
    assert [(v.run_id, v.covers_through) for v in kept] == [(r.id, r.last_message_id)
                                                             for r in applied]
    assert summary_at("versions", 2).text == "Summary number 2 of versions (delta echo foxtrot)."
    with pytest.raises(InvalidInput, match="no kept summary version 4 .*current version is 3"):
        summary_at("versions", 4)
    with pytest.raises(SessionNotFound):
        summary_at("nobody", 1)
    assert main(["history", "versions"]) == 0
    out = capsys.readouterr().out.splitlines()
    assert len(out) == 3 and out[0].startswith("v1 ")
    assert f"through message {kept[0].covers_through}" in out[0]
    assert main(["history", "versions", "--version", "1"]) == 0
    assert capsys.readouterr().out.strip() == (
        "Summary number 1 of versions (alpha bravo charlie).")


@pytest.mark.parametrize(("keep", "versions"), [(1, [3]), (2, [2, 3]), (0, [])])
def test_retention_keeps_the_newest_n_or_none(
        fake_api: FakeAnthropic, settings_env: Callable[..., None], keep: int,
        versions: list[int]) -> None:
    settings_env(**LOW, RECAP_SUMMARY_VERSIONS_KEEP=keep)
    seed("kept", 20)
    fold("kept", 3, fake_api)
    assert [v.version for v in history("kept")] == versions
