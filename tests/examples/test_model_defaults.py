"""The examples call the model README's examples call, unless the user names another."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

pytestmark = pytest.mark.unit

ROOT = Path(__file__).resolve().parents[2]


def test_the_node_client_defaults_to_readmes_model() -> None:
    readme = set(re.findall(r'model="(claude-[\w-]+)"', (ROOT / "README.md").read_text()))
    assert len(readme) == 1, readme
    script = (ROOT / "examples" / "http" / "chat.mjs").read_text()
    default = re.search(r'process\.env\.RECAP_MODEL \?\? "(claude-[\w-]+)"', script)
    assert default is not None and {default.group(1)} == readme
    assert f"default {default.group(1)}" in script  # its header comment says the same
