"""Where Recap keeps its own files when nobody says otherwise (stdlib only).

The embedded default database and broker, and beat's schedule, live in the
user's data directory, never in the current directory: a command run from a
checkout, a read-only container directory or ``/`` behaves the same.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

APP_DIR = "recap"


def data_dir() -> Path:
    """The platform's per-user data directory for Recap (not created here):
    ``$XDG_DATA_HOME/recap`` (default ``~/.local/share/recap``) on Linux and other
    Unixes, ``~/Library/Application Support/recap`` on macOS,
    ``%LOCALAPPDATA%\\recap`` on Windows."""
    if sys.platform == "win32":
        base = os.environ.get("LOCALAPPDATA") or str(Path.home() / "AppData" / "Local")
        return Path(base) / APP_DIR
    if sys.platform == "darwin":
        return Path.home() / "Library" / "Application Support" / APP_DIR
    xdg = os.environ.get("XDG_DATA_HOME", "")
    # The XDG spec: a relative value is invalid and must be ignored.
    base_dir = Path(xdg) if xdg and Path(xdg).is_absolute() else Path.home() / ".local" / "share"
    return base_dir / APP_DIR


def checkout_tiktoken_cache() -> Path | None:
    """Offline tiktoken encodings beside a source checkout: the folder
    ``<checkout>/../shared/tiktoken-cache`` that machines without internet access
    keep (its files named as tiktoken's cache names them). None for an installed
    package, or when there is no such folder."""
    checkout = Path(__file__).resolve().parents[1]
    if not (checkout / "pyproject.toml").is_file():
        return None
    found = checkout.parent / "shared" / "tiktoken-cache"
    return found if found.is_dir() else None


def default_database_path() -> Path:
    return data_dir() / "recap.sqlite3"


def default_broker_path() -> Path:
    return data_dir() / "recap-broker.sqlite3"


def default_beat_schedule() -> Path:
    """Beat's schedule file: in ``$RECAP_BEAT_DIR`` when set (a directory of beat's
    own), else in the data directory (the image's is /var/lib/recap)."""
    chosen = os.environ.get("RECAP_BEAT_DIR", "").strip()
    return (Path(chosen) if chosen else data_dir()) / "celerybeat-schedule"


def cli_log() -> Path:
    """Where ``recap`` writes the traceback of an unexpected error (its one line on
    stderr gives this path)."""
    return data_dir() / "logs" / "recap.log"
