"""A benchmark's table between section markers (recap.bench.harness.stats.section):
a docs page includes exactly that table from the file ``--out`` wrote, with
pymdownx.snippets as the docs site runs it."""

from __future__ import annotations

from pathlib import Path

import pytest

from recap.bench.harness.stats import section
from tests.helpers import require_module

pytestmark = pytest.mark.unit

TABLE = "### cost: demo\n\n| system | cost |\n|---|---|\n| Recap | 0.19 |\n"


def test_a_page_includes_one_section_of_a_result_file(tmp_path: Path) -> None:
    require_module("pymdownx", "pip install -e '.[docs]', part of [dev]")
    import markdown

    result = tmp_path / "cost.md"
    result.write_text("- command: recap bench --only cost\n" + section("demo", TABLE)
                      + section("short", "### cost: short\n\nother figures\n"))
    page = '--8<-- "cost.md:demo"\n'
    html = markdown.markdown(page, extensions=["tables", "pymdownx.snippets"], extension_configs={
        "pymdownx.snippets": {"base_path": [str(tmp_path)], "check_paths": True}})
    assert "<td>0.19</td>" in html and "cost: demo" in html
    assert "short" not in html and "command" not in html and "8&lt;" not in html
