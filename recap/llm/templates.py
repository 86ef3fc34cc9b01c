"""Prompt templates shipped in recap/llm/prompts/, or RECAP_PROMPT_FILE; validated on load."""

from __future__ import annotations

from importlib import resources
from pathlib import Path

from recap.core.prompts.summarize import validate_template
from recap.errors import ConfigError


def shipped_template(name: str = "default") -> str:
    """A template shipped in recap/llm/prompts/ (``default``, ``es``)."""
    return resources.files("recap.llm").joinpath(f"prompts/{name}.txt").read_text("utf-8")


def default_template() -> str:
    return shipped_template("default")


def load_template(path: Path | None, name: str = "default") -> str:
    """The template named ``name``; for ``default``, the file at ``path``
    (RECAP_PROMPT_FILE) when set. Validated."""
    if name != "default":
        return validate_template(shipped_template(name), source=f"{name} prompt")
    if path is None:
        return validate_template(default_template(), source="default prompt")
    try:
        text = Path(path).read_text("utf-8")
    except OSError as exc:
        raise ConfigError(f"RECAP_PROMPT_FILE: cannot read {path}: {exc}") from None
    return validate_template(text, source=f"RECAP_PROMPT_FILE {path}")
