"""Flower, as an operator's browser shows it: the session id and each job's outcome.

Two real jobs run on the in-process worker, one applied and one skipped (both
SUCCESS to Celery). Flower runs with the FLOWER_* settings docker-compose.yml
ships (the fixture of tests/deploy/test_flower.py). Headless Chromium, Debian's
``chromium`` (.ci/run installs it), loads the tasks page with basic auth; the
page fills its table from /tasks/datatable in JavaScript, so the test reads the
DOM Chromium rendered (``--dump-dom``), not the HTML Flower sent.
"""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import urllib.parse
import uuid
from collections.abc import Callable
from html.parser import HTMLParser
from pathlib import Path

import pytest

from recap import app
from tests.deploy import test_flower
from tests.deploy.test_flower import (
    FLOWER_PASSWORD,
    FLOWER_USER,
    LOW_THRESHOLDS,
    Flower,
    captured_events,
    shipped_flower_env,
    wait_until_listening,
)
from tests.helpers import require, runs, seed, session_row, statuses, wait_for

pytestmark = pytest.mark.system

flower = test_flower.flower  # the fixture: Flower as compose configures it
SUMMARIZE = "recap.tasks.summarize_session"


CHROMIUM_MISSING = ("Debian's chromium is not installed (apt-get install chromium): no "
                    "browser to render Flower's pages")


@pytest.fixture(autouse=True, scope="module")
def _needs_chromium() -> None:
    # Before Flower starts: skipped with the reason where Chromium is absent, a
    # failure under RECAP_TEST_NO_SKIP=1 (.ci/run installs it).
    require(shutil.which("chromium"), CHROMIUM_MISSING)


def chromium() -> str:
    path = shutil.which("chromium")
    assert path is not None, CHROMIUM_MISSING
    return path


def render(url: str, profile: Path) -> str:
    """The DOM of ``url`` once its scripts have run, as headless Chromium renders it."""
    argv = [chromium(), "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic",
            "--no-first-run", "--disable-background-networking",
            "--disable-component-update", "--disable-sync", f"--user-data-dir={profile}",
            # Virtual time runs on only once the page's requests have answered, so
            # the datatable's fetch is in the DOM when it is dumped.
            "--virtual-time-budget=10000", "--dump-dom", url]
    done = subprocess.run(argv, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, f"chromium exited with {done.returncode}:\n{done.stderr[-3000:]}"
    return done.stdout


class _Page(HTMLParser):
    """Text of the tasks table's rows (by row id, the task uuid) and of the task
    page's detail list (label to value)."""

    def __init__(self) -> None:
        super().__init__()
        self.rows: dict[str, list[str]] = {}
        self.details: dict[str, str] = {}
        self.headers: list[str] = []
        self._row: str | None = None
        self._cell: list[str] | None = None
        self._th: list[str] | None = None
        self._dt: list[str] | None = None
        self._dd: list[str] | None = None
        self._label = ""
        self._theads = 0

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        attr = dict(attrs)
        row_id = attr.get("id")
        if tag == "tr" and row_id:
            self._row = row_id
            self.rows[row_id] = []
        elif tag == "td" and self._row is not None:
            self._cell = []
        elif tag == "th" and attr.get("data-column") and self._theads == 0:
            self._th = []  # DataTables repeats the header (scrolling): the first counts
        elif tag == "dt":
            self._dt = []
        elif tag == "dd":
            self._dd = []

    def handle_endtag(self, tag: str) -> None:
        if tag == "td" and self._row is not None and self._cell is not None:
            self.rows[self._row].append(_text(self._cell))
            self._cell = None
        elif tag == "tr":
            self._row = None
        elif tag == "thead":
            self._theads += 1
        elif tag == "th" and self._th is not None:
            self.headers.append(_text(self._th))
            self._th = None
        elif tag == "dt" and self._dt is not None:
            self._label, self._dt = _text(self._dt), None
        elif tag == "dd" and self._dd is not None:
            self.details[self._label] = _text(self._dd)
            self._dd = None

    def handle_data(self, data: str) -> None:
        for part in (self._cell, self._th, self._dt, self._dd):
            if part is not None:
                part.append(data)


def _text(parts: list[str]) -> str:
    return " ".join("".join(parts).split())


def parse(dom: str) -> _Page:
    page = _Page()
    page.feed(dom)
    return page


def flower_result(flower: Flower, task_id: str) -> str:
    """The task's result once Flower has its task-succeeded event."""
    def succeeded() -> str | None:
        task = flower.json("/api/tasks").get(task_id)
        return task["result"] if task and task["state"] == "SUCCESS" else None

    result = wait_for(succeeded, timeout=30, interval=0.2, what=f"SUCCESS of {task_id}")
    assert isinstance(result, str)
    return result


def test_flower_shows_each_jobs_session_and_outcome_in_a_browser_behind_basic_auth(
        flower: Flower, celery_worker_thread: object,
        settings_env: Callable[..., None], tmp_path: Path) -> None:
    settings_env(**LOW_THRESHOLDS)
    tag = uuid.uuid4().hex[:8]
    applied, skipped = f"browser-applied-{tag}", f"browser-skipped-{tag}"
    seed(applied, 12)
    seed(skipped, 3)  # below the thresholds: a SUCCESS that changes nothing

    with captured_events() as seen:
        wait_until_listening(flower, seen)
        applied_id = app.send_task(SUMMARIZE, (applied,)).id
        skipped_id = app.send_task(SUMMARIZE, (skipped,)).id
        wait_for(lambda: statuses(applied) == ["applied"], timeout=60, what="the applied run")
        wait_for(lambda: statuses(skipped) == ["skipped"], timeout=60, what="the skipped run")
        applied_result = flower_result(flower, applied_id)
        skipped_result = flower_result(flower, skipped_id)

    row = session_row(applied)
    assert row is not None
    applied_line = f"applied 5 msgs v{row.summary_version} (normal)"
    (skipped_run,) = runs(skipped)
    reason = skipped_run.reason or ""
    assert reason.startswith("below thresholds: 3 messages")
    skipped_line = f"skipped: {reason}"
    # Celery reports the result as repr() of the task's return value.
    assert (applied_result, skipped_result) == (repr(applied_line), repr(skipped_line))

    base = f"http://{FLOWER_USER}:{FLOWER_PASSWORD}@{flower.url.removeprefix('http://')}"
    tasks = parse(render(f"{base}/tasks", tmp_path / "profile-list"))
    columns = shipped_flower_env()["FLOWER_TASKS_COLUMNS"].split(",")
    assert tasks.headers == ["Name", "UUID", "State", "args", "Result", "Received",
                             "Runtime", "Worker"]
    assert len(columns) == len(tasks.headers)
    assert {applied_id, skipped_id} <= set(tasks.rows), f"rows: {tasks.rows}"
    shown = {task_id: dict(zip(columns, tasks.rows[task_id], strict=True))
             for task_id in (applied_id, skipped_id)}
    for task_id, sid, line in ((applied_id, applied, applied_line),
                               (skipped_id, skipped, skipped_line)):
        cells = shown[task_id]
        assert cells["name"] == SUMMARIZE
        assert cells["uuid"].startswith(task_id)
        assert cells["state"] == "SUCCESS"
        assert cells["args"] == repr((sid,))
        assert cells["result"] == repr(line)
        assert re.fullmatch(r"\d{4}-\d\d-\d\d \d\d:\d\d:\d\d\.\d{3}", cells["received"])

    detail = parse(render(f"{base}/task/{applied_id}", tmp_path / "profile-task"))
    assert detail.details["Name"] == SUMMARIZE
    assert detail.details["Status"] == "SUCCESS"
    assert detail.details["Arguments"] == repr((applied,))
    assert detail.details["Result"] == repr(applied_line)
    _report(shown, detail.details)

    # The searches docs/operations/monitoring.md suggests: by session id, by outcome.
    assert found(flower, f"args:{applied}") == [applied_id]
    assert found(flower, f"result:skipped {skipped}") == [skipped_id]
    assert found(flower, f"result:applied {applied}") == [applied_id]

    # Without the right credentials: 401, and the browser shows nothing of the jobs.
    for path in ("/tasks", "/tasks/datatable", f"/task/{applied_id}", "/api/tasks"):
        assert flower.get(path, auth="")[0] == 401, path
    wrong = base.replace(f":{FLOWER_PASSWORD}@", ":wrong@")
    refused = render(f"{wrong}/tasks", tmp_path / "profile-refused")
    assert applied not in refused and applied_line not in refused
    assert parse(refused).rows == {}


def found(flower: Flower, search: str) -> list[str]:
    """Task ids the tasks page lists for ``search`` (its search box's query)."""
    query = urllib.parse.urlencode({"draw": 1, "start": 0, "length": 100,
                                    "order[0][column]": 0, "order[0][dir]": "desc",
                                    "columns[0][data]": "received", "search[value]": search})
    status, body = flower.get(f"/tasks/datatable?{query}")
    assert status == 200, body[:500]
    page = json.loads(body)
    assert "searchError" not in page, page["searchError"]
    return [task["uuid"] for task in page["data"]]


def _report(shown: dict[str, dict[str, str]], details: dict[str, str]) -> None:
    """What the operator saw, for the log of a -s run."""
    for cells in shown.values():
        print("tasks page row:", " | ".join(f"{k}={v}" for k, v in cells.items()))
    print("task page:", " | ".join(f"{k}={v}" for k, v in details.items()))
