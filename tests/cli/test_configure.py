"""``recap configure``: KEY=VALUE is merged into the stored overrides (``KEY=``
removes one, ``--replace`` replaces them all, ``--reset`` clears them), an id never
stored is refused unless ``--create``, and a model Recap does not know is stored
with a warning naming the nearest known one."""

from __future__ import annotations

import json

import pytest
from sqlalchemy import func, select

from recap import db
from recap.models import ChatSession
from tests.cli.common import run
from tests.helpers import seed, session_row


def configure(capsys: pytest.CaptureFixture[str], *argv: str) -> dict[str, object] | None:
    code, out, err = run(capsys, "configure", *argv)
    assert code == 0, err
    overrides: dict[str, object] | None = json.loads(out)["overrides"]
    return overrides


def test_settings_merge_into_the_stored_ones(capsys: pytest.CaptureFixture[str]) -> None:
    seed("cfg-merge", 2)
    assert configure(capsys, "cfg-merge", "keep_recent=6") == {"keep_recent": 6}
    assert configure(capsys, "cfg-merge", "prompt=es") == {"keep_recent": 6, "prompt": "es"}
    assert configure(capsys, "cfg-merge", "keep_recent=") == {"prompt": "es"}
    assert configure(capsys, "cfg-merge", "keep_recent=4", "--replace") == {"keep_recent": 4}
    row = session_row("cfg-merge")
    assert row is not None and row.overrides == {"keep_recent": 4}
    assert configure(capsys, "cfg-merge", "--reset") is None


def test_the_policy_fit_is_judged_on_the_merged_settings(
        capsys: pytest.CaptureFixture[str]) -> None:
    seed("cfg-fit", 2)
    configure(capsys, "cfg-fit", "policy=threshold")
    assert configure(capsys, "cfg-fit", "trigger_tokens=4000") == {
        "policy": "threshold", "trigger_tokens": 4000}
    code, _, err = run(capsys, "configure", "cfg-fit", "policy=adaptive")
    assert code == 1 and "trigger_tokens is not read by the adaptive policy" in err
    assert configure(capsys, "cfg-fit") == {"policy": "threshold", "trigger_tokens": 4000}


@pytest.mark.parametrize("argv", [("keep_recent=6",), ("--reset",), ()])
def test_an_unknown_session_is_refused_naming_it(
        capsys: pytest.CaptureFixture[str], argv: tuple[str, ...]) -> None:
    code, out, err = run(capsys, "configure", "SESSION_ID", *argv)
    assert code == 1 and out == ""
    assert "no chat session with id 'SESSION_ID'" in err and "--create" in err
    with db.transaction() as s:
        assert s.scalar(select(func.count()).select_from(ChatSession)) == 0


def test_create_stores_a_new_session(capsys: pytest.CaptureFixture[str]) -> None:
    assert configure(capsys, "cfg-new", "keep_recent=6", "--create") == {"keep_recent": 6}
    assert configure(capsys, "cfg-bare", "--create") is None
    assert session_row("cfg-bare") is not None


def test_an_unknown_model_is_stored_with_a_warning(capsys: pytest.CaptureFixture[str]) -> None:
    seed("cfg-model", 2)
    code, out, err = run(capsys, "configure", "cfg-model", "model=claude-sonet-5-5")
    assert code == 0 and json.loads(out)["overrides"] == {"model": "claude-sonet-5-5"}
    assert err.startswith("recap: warning: model 'claude-sonet-5-5' is not a Claude model")
    assert "did you mean 'claude-sonnet-5-5'?" in err
    code, _, err = run(capsys, "configure", "cfg-model", "model=claude-sonnet-5-5")
    assert code == 0 and err == ""


@pytest.mark.parametrize(("argv", "problem"), [
    (("keep_recent=6", "--reset"), "--reset removes every override"),
    (("--replace", "--reset"), "--reset removes every override"),
    (("--replace",), "--replace needs the KEY=VALUE"),
    (("keep_recent",), "expected KEY=VALUE, got 'keep_recent'"),
    (("=6",), "expected KEY=VALUE"),
])
def test_a_bad_call_says_why_and_changes_nothing(
        capsys: pytest.CaptureFixture[str], argv: tuple[str, ...], problem: str) -> None:
    seed("cfg-bad", 2)
    code, _, err = run(capsys, "configure", "cfg-bad", *argv)
    assert code == 1 and problem in err
    row = session_row("cfg-bad")
    assert row is not None and row.overrides is None
