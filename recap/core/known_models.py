"""The Claude model names Recap knows, and the nearest one to a name it does not.
Pure.

A session's ``model`` may name a model released after this list was written, so an
unknown name is stored with a warning (naming the nearest known model), never
refused. Names are compared without what only locates a model: a date snapshot
(``-20250929``), ``-latest``, a cloud's prefix or version suffix
(``us.anthropic.``, ``-v1:0``, ``@20250929``) and an ARN's path.
"""

from __future__ import annotations

import difflib

from recap.core.planning.prices import DEFAULT_REPLY_MODEL, FAMILIES, TABLE

# Older models Recap has run with that the price table (which prices every current
# model) no longer lists; they are priced as their family's newest.
EARLIER_MODELS: tuple[str, ...] = (
    "claude-opus-4-0",
    "claude-sonnet-4-0",
    "claude-3-7-sonnet",
    "claude-3-5-sonnet",
    "claude-3-5-haiku",
    "claude-3-opus",
    "claude-3-haiku",
)
# Every Claude model Recap knows: the priced ones first, newest first, then the earlier.
KNOWN_MODELS: tuple[str, ...] = (*TABLE, *EARLIER_MODELS)
# What a warning offers when no known name is near: each family's newest model,
# the default reply model first.
NEWEST: tuple[str, ...] = (DEFAULT_REPLY_MODEL,
                           *(m for m in FAMILIES.values() if m != DEFAULT_REPLY_MODEL))
# How alike a name must be to a known one (difflib's ratio) to be offered as meant.
NEAR_CUTOFF = 0.6


def base_name(model: str) -> str:
    """``model`` without what only locates it: ``us.anthropic.claude-sonnet-4-5-20250929-v1:0``
    is ``claude-sonnet-4-5``."""
    name = model.strip().lower().rsplit("/", 1)[-1]  # an ARN's inference profile
    name = name.partition("@")[0]  # Vertex: claude-sonnet-4-5@20250929
    start = name.find("claude-")
    if start > 0:  # Bedrock: anthropic.claude-..., us.anthropic.claude-...
        name = name[start:]
    head, sep, tail = name.rpartition("-v")  # Bedrock: ...-v1:0
    if sep and tail.replace(":", "").isdigit():
        name = head
    for suffix in ("-latest",):
        name = name.removesuffix(suffix)
    head, sep, tail = name.rpartition("-")
    if sep and len(tail) == 8 and tail.isdigit():  # a date snapshot
        name = head
    return name


def is_known(model: str) -> bool:
    """Whether ``model`` names a model of :data:`KNOWN_MODELS` (any snapshot or cloud id)."""
    return base_name(model) in KNOWN_MODELS


def nearest_known(model: str) -> str | None:
    """The known model most like ``model``, None when none is close enough."""
    found = difflib.get_close_matches(base_name(model), KNOWN_MODELS, n=1, cutoff=NEAR_CUTOFF)
    return found[0] if found else None


def unknown_model_warning(model: str) -> str | None:
    """The warning for a model name outside :data:`KNOWN_MODELS` (None for a known one),
    naming the nearest known model."""
    if is_known(model):
        return None
    near = nearest_known(model)
    hint = (f"did you mean {near!r}?" if near is not None
            else f"known models: {', '.join(NEWEST)}, and earlier ones of each family")
    return (f"model {model!r} is not a Claude model Recap knows; {hint} (stored as given: "
            "a job calling a model that does not exist fails)")
