"""An unexpected error in a ``recap`` command is one line on stderr naming the log
file that holds its traceback, not a page of traceback."""

from __future__ import annotations

import argparse
from pathlib import Path

import pytest

from worker.cli import main, sessions


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
