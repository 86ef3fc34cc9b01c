"""Where Recap keeps its own files by default: the user's data directory, never the
current one (recap/paths.py), by each platform's convention."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from recap import paths

pytestmark = pytest.mark.unit


def test_linux_follows_xdg(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setattr(sys, "platform", "linux")
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path))
    assert paths.data_dir() == tmp_path / "recap"
    assert paths.default_database_path() == tmp_path / "recap" / "recap.sqlite3"
    assert paths.default_broker_path() == tmp_path / "recap" / "recap-broker.sqlite3"
    assert paths.default_beat_schedule() == tmp_path / "recap" / "celerybeat-schedule"
    assert paths.cli_log() == tmp_path / "recap" / "logs" / "recap.log"
    monkeypatch.setenv("XDG_DATA_HOME", "relative/dir")  # invalid per the spec: ignored
    assert paths.data_dir() == Path.home() / ".local" / "share" / "recap"
    monkeypatch.delenv("XDG_DATA_HOME")
    assert paths.data_dir() == Path.home() / ".local" / "share" / "recap"


def test_macos_and_windows(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setattr(sys, "platform", "darwin")
    assert paths.data_dir() == Path.home() / "Library" / "Application Support" / "recap"
    monkeypatch.setattr(sys, "platform", "win32")
    monkeypatch.setenv("LOCALAPPDATA", str(tmp_path))
    assert paths.data_dir() == tmp_path / "recap"
