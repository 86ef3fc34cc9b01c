"""The plan's mode is a value carried from the policy to the job's outcome, the
task's result line and the audit row; nothing parses it out of a reason."""

from __future__ import annotations

from collections.abc import Callable

import pytest

from recap.core.planning.policy import Mode
from recap.testing import FakeAnthropic
from recap.worker.jobs.outcome import Job
from recap.worker.jobs.resources import get_resources
from recap.worker.jobs.summarize import summarize
from recap.worker.tasks import result_line
from tests.helpers import LOW, message_ids, runs, seed


@pytest.fixture(autouse=True)
def low_thresholds(settings_env: Callable[..., None]) -> None:
    settings_env(**LOW)


def test_a_normal_fold_records_its_mode(fake_api: FakeAnthropic) -> None:
    ids = seed("mode-normal", 12)
    outcome = summarize("mode-normal", job=Job(task_id="t-normal"), res=get_resources())
    assert outcome.status == "applied" and outcome.mode is Mode.NORMAL
    assert outcome.as_dict()["mode"] == "normal"
    assert result_line(outcome).endswith("(normal)")
    (run,) = runs("mode-normal")
    assert (run.status, run.mode) == ("applied", "normal")
    assert message_ids("mode-normal") == ids[5:]


def test_a_forced_fold_and_a_skip_record_theirs(fake_api: FakeAnthropic) -> None:
    seed("mode-forced", 6)  # below every threshold
    skipped = summarize("mode-forced", job=Job(task_id="t-skip"), res=get_resources())
    assert skipped.status == "skipped" and skipped.mode is Mode.NONE
    forced = summarize("mode-forced", job=Job(task_id="t-forced"), res=get_resources(),
                       force=True)
    assert forced.status == "applied" and forced.mode is Mode.FORCED
    # The reason still says why in words; the mode no longer depends on its wording.
    assert forced.reason.startswith("forced: ")
    assert [(r.status, r.mode) for r in runs("mode-forced")] == [("skipped", "none"),
                                                                 ("applied", "forced")]


def test_the_result_line_reads_the_mode_not_the_reason(fake_api: FakeAnthropic) -> None:
    seed("mode-line", 12)
    outcome = summarize("mode-line", job=Job(task_id="t-line"), res=get_resources())
    outcome.reason = "worded any way at all"
    assert result_line(outcome) == (f"applied {outcome.messages_condensed} msgs "
                                    f"v{outcome.summary_version} (normal)")
