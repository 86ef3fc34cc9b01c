"""``python -m bench --compare REF [--only NAMES] [--runs N] [--quick]``: ``recap
bench``'s hook or loop, A/B against any git ref, in one sitting.

The machine's speed varies from hour to hour (and other processes share it), so
only runs alternated in one sitting compare. This builds REF in a temporary git
worktree with a virtualenv of its own (REF installed editable, without its
dependencies: the current environment's packages serve it), then runs the chosen
benchmarks ``--runs`` times on each side, alternating (REF, tree, tree, REF, ...),
each side its own benchmark runner in its own checkout (``python -m recap.bench``,
or ``python -m bench`` for a REF from before the benchmarks moved into the
package), so a REF from before any rename runs its own code. Figures come from
each run's ``--json`` line, or, for a REF whose benchmarks print no JSON, from its
printed Markdown tables. Prints the median per figure on each side and the ratio
tree / REF.
"""

from __future__ import annotations

import json
import os
import shutil
import statistics
import subprocess
import sys
import sysconfig
import tempfile
from pathlib import Path

from recap.bench.harness.stats import table

ROOT = Path(__file__).resolve().parent.parent


def git(*args: str, cwd: Path = ROOT) -> str:
    return subprocess.run(["git", *args], cwd=cwd, check=True, capture_output=True,
                          text=True).stdout.strip()


def build(ref: str, where: Path) -> Path:
    """Check ``ref`` out at ``where`` and give it a virtualenv; its python."""
    git("worktree", "add", "--detach", str(where / "tree"), ref)
    venv = where / "venv"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True)
    python = venv / "bin" / "python"
    purelib = subprocess.run([str(python), "-c", "import sysconfig; "
                              "print(sysconfig.get_paths()['purelib'])"],
                             check=True, capture_output=True, text=True).stdout.strip()
    # The current environment's packages, as plain path lines (their own .pth files,
    # among them this tree's editable install, are not run): every site-packages
    # folder on sys.path, so a virtualenv that lends another's packages through a
    # .pth line of its own lends them here too.
    sites = [sysconfig.get_paths()["purelib"],
             *(p for p in sys.path if Path(p).name == "site-packages" and Path(p).is_dir())]
    Path(purelib, "zz_bench_compare_base.pth").write_text(
        "".join(f"{site}\n" for site in dict.fromkeys(sites)), encoding="utf-8")
    subprocess.run([str(python), "-m", "pip", "install", "-q", "--no-deps", "-e",
                    str(where / "tree")], check=True, capture_output=True, text=True)
    return python


def runner(checkout: Path) -> str:
    """The module that runs that checkout's benchmarks: the package's, or, before they
    moved into it, the checkout's top-level ``bench``."""
    return "recap.bench" if (checkout / "recap" / "bench" / "__main__.py").is_file() else "bench"


def speaks_json(python: Path, checkout: Path) -> bool:
    """Whether that checkout's benchmark runner has ``--json``."""
    out = subprocess.run([str(python), "-m", runner(checkout), "--help"], cwd=checkout,
                         capture_output=True, text=True)
    return "--json" in out.stdout


def table_figures(text: str) -> dict[str, float]:
    """Figures from printed Markdown tables: each row of a table with a ``p50 ms``
    column, named like recap.bench.hook.figures names them."""
    found: dict[str, float] = {}
    header: list[str] | None = None
    for line in text.splitlines():
        if not line.startswith("|"):
            header = None
            continue
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if header is None:
            header = cells
            continue
        if set(line) <= set("|-: ") or "p50 ms" not in header:
            continue
        row = dict(zip(header, cells, strict=False))
        try:
            value = float(row["p50 ms"])
        except ValueError:
            continue
        found[f"{row.get('call', '?')} [{row.get('phase', '?')}] p50 ms"] = value
    return found


def json_figures(text: str) -> dict[str, float]:
    """Figures from the ``{"benchmark": ..., "figures": {...}}`` lines of a run."""
    found: dict[str, float] = {}
    for line in text.splitlines():
        if line.startswith('{"benchmark"'):
            found.update(json.loads(line)["figures"])
    return found


def run_side(python: Path, checkout: Path, names: list[str], *, quick: bool,
             as_json: bool) -> dict[str, float]:
    """One run of the benchmarks ``names`` in ``checkout``; its figures."""
    cmd = [str(python), "-m", runner(checkout), "--only", ",".join(names), "--latency", "0.8"]
    cmd += ["--quick"] if quick else []
    cmd += ["--json"] if as_json else []
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "VIRTUAL_ENV")}
    done = subprocess.run(cmd, cwd=checkout, capture_output=True, text=True, env=env)
    if done.returncode != 0:
        raise RuntimeError(f"{' '.join(cmd)} in {checkout} failed ({done.returncode}):\n"
                           f"{done.stdout[-2000:]}\n{done.stderr[-2000:]}")
    figures = json_figures(done.stdout) if as_json else table_figures(done.stdout)
    if not figures:
        raise RuntimeError(f"no figures in the output of {' '.join(cmd)} in {checkout}")
    return figures


def ratio_rows(ref: list[dict[str, float]], tree: list[dict[str, float]]
               ) -> list[list[object]]:
    """Per figure both sides have: medians, ratio tree / REF, and the runs."""
    rows: list[list[object]] = []
    for name in [n for n in tree[0] if all(n in r for r in ref + tree)]:
        a = [r[name] for r in ref]
        b = [r[name] for r in tree]
        ma, mb = statistics.median(a), statistics.median(b)
        rows.append([name, f"{ma:.2f}", f"{mb:.2f}",
                     f"{mb / ma:.2f}x" if ma else "n/a",
                     ", ".join(f"{x:.2f}" for x in a), ", ".join(f"{x:.2f}" for x in b)])
    return rows


def compare(ref: str, names: list[str], *, runs: int = 3, quick: bool = False) -> str:
    """Alternate ``runs`` runs of ``names`` between ``ref`` and the working tree."""
    sha = git("rev-parse", "--short", ref)
    where = Path(tempfile.mkdtemp(prefix="recap-compare-"))
    try:
        print(f"building {ref} ({sha}) in {where} ...", flush=True)
        ref_python = build(ref, where)
        ref_json = speaks_json(ref_python, where / "tree")
        ref_runs: list[dict[str, float]] = []
        tree_runs: list[dict[str, float]] = []
        for i in range(runs):
            order = [("ref", ref_python, where / "tree", ref_json),
                     ("tree", Path(sys.executable), ROOT, True)]
            for side, python, checkout, as_json in order if i % 2 == 0 else order[::-1]:
                print(f"run {i + 1}/{runs}: {side}", flush=True)
                figures = run_side(python, checkout, names, quick=quick, as_json=as_json)
                (ref_runs if side == "ref" else tree_runs).append(figures)
    finally:
        subprocess.run(["git", "worktree", "remove", "--force", str(where / "tree")],
                       cwd=ROOT, capture_output=True)
        shutil.rmtree(where, ignore_errors=True)
    head = (f"\n### compare: {ref} ({sha}) vs the working tree, {runs} alternated runs "
            f"each in one sitting ({runner(ROOT)} --only {','.join(names)}"
            f"{' --quick' if quick else ''}); medians, ratio = tree / {ref}\n\n")
    body = table(["figure", f"{ref} median", "tree median", "ratio", f"{ref} runs",
                  "tree runs"], ratio_rows(ref_runs, tree_runs))
    text = head + body + "\n"
    print(text, flush=True)
    return text
