"""The details section of a summary: Recap's own verbatim lines, grouped by where
they came from (pure). The retention guard (recap.core.retention.guard) writes it; every
fold reads the previous one back and rebuilds it."""

from __future__ import annotations

from collections.abc import Sequence

from recap.core.defuse import details_like, escape_breaks
from recap.core.retention.salience import Origin

DETAILS_HEADER = "Details (kept verbatim by Recap):"
# The details section is grouped by where its lines came from, in this order; a
# line read from the previous summary's prose goes under the plain header.
DETAILS_HEADERS: dict[Origin, str] = {
    Origin.USER: f"{DETAILS_HEADER} stated by the user",
    Origin.DOCUMENT: f"{DETAILS_HEADER} from text the user pasted or quoted",
    Origin.ASSISTANT: f"{DETAILS_HEADER} from the assistant's replies",
    Origin.TOOL: f"{DETAILS_HEADER} from tool results",
    Origin.SUMMARY: DETAILS_HEADER,
}
_ORIGIN_OF_HEADER = {h: o for o, h in DETAILS_HEADERS.items()}


def _header(line: str) -> Origin | None:
    return _ORIGIN_OF_HEADER.get(line.strip())


def strip_details(summary: str) -> str:
    """``summary`` without its details section (Recap's, copied back by the model):
    each header line and the ``- `` lines right after it; any text after them stays."""
    out: list[str] = []
    inside = False
    for line in summary.split("\n"):
        # A near-copy (in bold, as a heading, respelled) is the model's: cut too.
        if _header(line) is not None or details_like(line):
            inside = True
            continue
        if inside and line.lstrip().startswith(_BULLETS):
            continue
        inside = False
        out.append(line)
    return "\n".join(out).strip()


# The bullets of a details section as a model may copy it.
_BULLETS = ("- ", "* ", "• ", "+ ")


def details_sections(summary: str) -> list[tuple[Origin, str]]:
    """The lines of ``summary``'s details section, without their ``- ``, each with
    the origin its header names."""
    out: list[tuple[Origin, str]] = []
    inside: Origin | None = None
    for line in summary.split("\n"):
        origin = _header(line)
        if origin is not None:
            inside = origin
        elif inside is not None and line.startswith("- "):
            out.append((inside, line[2:]))
        else:
            inside = None
    return out


def details_lines(summary: str) -> list[str]:
    """The lines of ``summary``'s details section, without their ``- ``."""
    return [line for _, line in details_sections(summary)]


def render_details(lines: Sequence[tuple[Origin, str]]) -> str:
    """The details section for ``lines`` (origin, entry): a header per origin, in
    :data:`DETAILS_HEADERS` order, each group's lines in the order given."""
    parts = []
    for origin, header in DETAILS_HEADERS.items():
        group = [f"- {escape_breaks(line)}" for o, line in lines if o is origin]
        if group:
            parts.append("\n".join([header, *group]))
    return "\n\n".join(parts)
