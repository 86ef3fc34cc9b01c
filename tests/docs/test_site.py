"""The docs site (mkdocs.yml) builds in strict mode: every page is in the nav,
every link between pages and every anchor resolves, every included result file
exists. README.md is outside the site: its links into docs/ are checked against
the built pages. CI builds the site too (.ci/run)."""

from __future__ import annotations

import re
import shutil
import subprocess
from pathlib import Path

import pytest

from tests.docs.blocks import ROOT
from tests.helpers import require

pytestmark = pytest.mark.unit
LINK = re.compile(r"\]\(([^)\s]+)\)")


def build(site: Path) -> None:
    mkdocs = shutil.which("mkdocs")
    require(mkdocs, "mkdocs is not installed (pip install -e '.[docs]', part of [dev])")
    assert mkdocs is not None
    done = subprocess.run([mkdocs, "build", "--strict", "--site-dir", str(site)],
                          cwd=ROOT, capture_output=True, text=True, timeout=300,
                          env={"PATH": str(Path(mkdocs).parent), "NO_MKDOCS_2_WARNING": "1"})
    assert done.returncode == 0, done.stderr


def page(site: Path, doc: str) -> Path:
    """The built file of ``doc`` (a path under docs/)."""
    if not doc.endswith(".md"):
        return site / doc
    stem = doc.removesuffix(".md")
    return site / ("index.html" if stem == "index" else
                   f"{stem.removesuffix('/index')}/index.html" if stem.endswith("index")
                   else f"{stem}/index.html")


def test_the_site_builds_strict_and_readme_links_into_it(tmp_path: Path) -> None:
    site = tmp_path / "site"
    build(site)
    assert (site / "index.html").is_file()
    assert (site / "search" / "search_index.json").is_file()
    broken = []
    for target in LINK.findall((ROOT / "README.md").read_text()):
        if target.startswith(("http://", "https://", "#")):
            continue
        path, _, anchor = target.partition("#")
        assert path.startswith("docs/"), f"README links outside the docs: {target}"
        built = page(site, path.removeprefix("docs/"))
        if not built.is_file() or (anchor and f'id="{anchor}"' not in built.read_text()):
            broken.append(target)
    assert not broken, f"README's links that the site does not have: {broken}"
