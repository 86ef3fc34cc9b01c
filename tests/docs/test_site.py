"""The docs site (mkdocs.yml) builds in strict mode: every page is in the nav,
every link between pages and every anchor resolves, every included result file
exists. CI builds it too (.ci/run)."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

from tests.docs.blocks import ROOT
from tests.helpers import require

pytestmark = pytest.mark.unit


def test_the_site_builds_strict(tmp_path: Path) -> None:
    mkdocs = shutil.which("mkdocs")
    require(mkdocs, "mkdocs is not installed (pip install -e '.[docs]', part of [dev])")
    assert mkdocs is not None
    done = subprocess.run([mkdocs, "build", "--strict", "--site-dir", str(tmp_path / "site")],
                          cwd=ROOT, capture_output=True, text=True, timeout=300,
                          env={"PATH": str(Path(mkdocs).parent), "NO_MKDOCS_2_WARNING": "1"})
    assert done.returncode == 0, done.stderr
    assert (tmp_path / "site" / "index.html").is_file()
    assert (tmp_path / "site" / "search" / "search_index.json").is_file()
