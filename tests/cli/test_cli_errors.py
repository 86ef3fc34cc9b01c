"""An unexpected error in a ``recap`` command is one line on stderr naming the log
file that holds its traceback, not a page of traceback."""

from __future__ import annotations

import argparse
from collections.abc import Callable
from pathlib import Path

import pytest

from recap.cli import main, sessions
from tests.helpers import seed, statuses


def test_an_unexpected_error_is_one_line_and_its_traceback_is_logged(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
        capsys: pytest.CaptureFixture[str]) -> None:
    def broken(args: argparse.Namespace) -> int:
        raise RuntimeError("the socket went away\nsecond line")

    monkeypatch.setattr(sessions, "run", broken)
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path))
    assert main(["sessions"]) == 1
    out, err = capsys.readouterr()
    log = tmp_path / "recap" / "logs" / "recap.log"
    assert (out, err) == ("", f"recap: error: RuntimeError: the socket went away "
                              f"(traceback in {log})\n")
    text = log.read_text()
    assert "Traceback (most recent call last)" in text and "in broken" in text
    assert main(["sessions"]) == 1  # appended, not replaced
    assert log.read_text().count("Traceback (most recent call last)") == 2


def test_summarize_force_without_a_key_says_what_is_missing(
        monkeypatch: pytest.MonkeyPatch, settings_env: Callable[..., None],
        capsys: pytest.CaptureFixture[str]) -> None:
    seed("nokey", 14)
    monkeypatch.delenv("ANTHROPIC_API_KEY")
    settings_env()  # settings read again, without the key
    assert main(["summarize", "nokey", "--force"]) == 1
    [line] = capsys.readouterr().err.splitlines()
    assert line.startswith("recap: error: summarize --now/--force runs the configured "
                           "summarizer in this process, and it cannot start: "
                           "ANTHROPIC_API_KEY is not set"), line
    assert "RECAP_SUMMARIZER=offline" in line
    assert statuses("nokey") == []  # nothing was claimed or recorded
    settings_env(RECAP_SUMMARIZER="offline")  # the configured summarizer is used
    assert main(["summarize", "nokey", "--force"]) == 0
    assert statuses("nokey") == ["applied"]
