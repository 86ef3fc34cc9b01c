"""The prediction check (bench/prediction.py): it reads the reasons the policy writes,
counts what held, and runs end to end on tiny workloads. No assertion on how many
predictions hold: the bench prints figures, it does not judge the code under test."""

from __future__ import annotations

import pytest

from bench.prediction import HEADERS, MUST, PAYS, Fold, Result, rows_of
from bench.tests.lab import run_on_own_bench
from recap.core.planning.pricing import choose


@pytest.mark.unit
def test_a_paying_fold_reason_is_read_back_with_its_figures() -> None:
    pays = choose(batch_tokens=20_000, summary_tokens=1_000, rewritten_tokens=3_000,
                  replies_so_far=40)
    assert pays.action == "fold"
    m = PAYS.search(f"adaptive: about 88 tokens a reply; past it, {pays.reason}; context")
    assert m is not None
    n, call, write, saved = (int(g) for g in m.groups())
    assert n == pays.remaining_replies == 40
    assert abs((saved - call - write) - pays.fold.net) <= 2  # each figure rounded once
    forced = choose(batch_tokens=100, summary_tokens=1_000, rewritten_tokens=3_000,
                    replies_so_far=1, over_capacity=True)
    assert MUST in forced.reason and PAYS.search(forced.reason) is None


@pytest.mark.unit
def test_share_held_counts_only_the_folds_that_reached_their_replies() -> None:
    folds = [Fold("s", 10, 10, 500, 0.2, accounted=300.0),
             Fold("s", 30, 10, 800, 0.3, accounted=-5.0),
             Fold("s", 50, 40, 900, 0.1, accounted=None)]  # the session ended first
    r = Result("w", folds, unpriced=2)
    assert len(r.reached) == 2 and r.held == 1
    rows = rows_of([r])
    assert len(rows) == 2 and all(len(row) == len(HEADERS) for row in rows)
    assert rows[0][:5] == ["w", 3, 2, 1, "50%"] and rows[-1][0] == "all"
    assert rows[0][-1] == 2 and rows[0][5] == "650"


@pytest.mark.system
def test_the_check_runs_on_tiny_workloads() -> None:
    done = run_on_own_bench("from bench import prediction",
                            'prediction.run(size="tiny", names=("demo", "multi"))', timeout=600)
    assert done.returncode == 0, done.stderr[-4000:]
    assert "[start:prediction]" in done.stdout and "| all " in done.stdout
    assert "| demo " in done.stdout and "| multi " in done.stdout
