"""``python -m bench --compare`` keeps working: one alternated run of ``recap bench``'s
hook against HEAD at tiny sizes (RECAP_BENCH_TINY), and its parsers on fixed text.
No timing assertions: the command prints figures."""

from __future__ import annotations

import subprocess
import sys

import pytest

from bench.compare import json_figures, ratio_rows, table_figures
from bench.tests.lab import ROOT, clean_env

pytestmark = pytest.mark.system


OLD_TABLE = """
### hook: reply-path latency on PostgreSQL (5 sessions x 30 replies)

| phase | call | n | p50 ms | p99 ms | max ms |
|-------|------|---|--------|--------|--------|
| alone (no worker in this process) | add_message | 300 | 0.96 | 2.10 | 3.00 |
| alone (no worker in this process) | after_reply (queued a job) | 0 | n/a | n/a | n/a |

| what | us per call |
|------|-------------|
| might_trigger | 4.20 |
"""


def test_figures_from_an_old_table_and_from_json_have_the_same_names() -> None:
    from recap.bench.hook import figures

    old = table_figures(OLD_TABLE)
    new = figures([["alone (no worker in this process)", "add_message", 300, "1.01", "2", "3"]])
    assert old == {"add_message [alone (no worker in this process)] p50 ms": 0.96}
    assert set(new) == set(old)
    assert json_figures('noise\n{"benchmark": "hook", "figures": {"a": 1.5}}\n') == {"a": 1.5}
    rows = ratio_rows([{"a": 1.0}, {"a": 2.0}, {"a": 3.0}], [{"a": 2.0}, {"a": 4.0}, {"a": 6.0}])
    assert rows == [["a", "2.00", "4.00", "2.00x", "1.00, 2.00, 3.00", "2.00, 4.00, 6.00"]]


def test_compare_takes_only_benchmarks_with_figures(capsys: pytest.CaptureFixture[str]) -> None:
    from bench.__main__ import parse

    with pytest.raises(SystemExit) as exit_:
        parse(["--compare", "HEAD", "--only", "cost"])
    assert exit_.value.code == 2
    assert ("unknown benchmark(s) cost; choose from hook, loop (--compare takes recap "
            "bench's benchmarks with figures)") in capsys.readouterr().err


@pytest.mark.slow
def test_compare_head_hook_tiny() -> None:
    env = clean_env()
    env["RECAP_BENCH_TINY"] = "1"
    proc = subprocess.run([sys.executable, "-m", "bench", "--compare", "HEAD", "--only", "hook",
                           "--runs", "1"], cwd=ROOT, env=env, capture_output=True, text=True,
                          timeout=900)
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-3000:]
    assert "vs the working tree, 1 alternated runs" in proc.stdout
    assert "| after_reply (no job queued) [alone (no worker in this process)] p50 ms" \
        in proc.stdout
