"""``python -m bench``'s choices: the lab's benchmarks by name, ``--quick`` alone the
verdict, ``--compare`` on recap bench's benchmarks with figures."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from bench.__main__ import NAMES, parse

ROOT = Path(__file__).resolve().parents[2]


@pytest.mark.unit
@pytest.mark.parametrize(("argv", "chosen"), [
    ([], ["verdict", "reach"]),
    (["--quick"], ["verdict"]),
    (["--only", "reach, realmodel"], ["reach", "realmodel"]),
    (["--compare", "HEAD"], ["hook"]),
    (["--compare", "HEAD", "--only", "loop"], ["loop"]),
])
def test_what_a_run_chooses(argv: list[str], chosen: list[str]) -> None:
    assert parse(argv).names == chosen


@pytest.mark.unit
def test_the_users_benchmarks_are_not_the_labs(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exit_:
        parse(["--only", "hook"])
    assert exit_.value.code == 2
    assert (f"unknown benchmark(s) hook; choose from {', '.join(NAMES)}"
            in capsys.readouterr().err)


@pytest.mark.system
def test_the_lab_runs_from_the_checkout() -> None:
    done = subprocess.run([sys.executable, "-m", "bench", "--help"], cwd=ROOT,
                          capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    assert "--compare REF" in done.stdout and "--schema-aware" in done.stdout
