"""The code blocks of README.md and every page under docs/ (docs/**/*.md), with
the marker each carries.

A block a user would run (fenced as python, bash, sh, shell or console, or an
unfenced-language block whose first line is a command) carries an HTML comment on
the line above its fence:

- ``<!-- runs -->``: tests/docs/test_blocks.py runs it verbatim against the test
  environment (PostgreSQL, the run's Redis database and queue, a worker thread,
  the Messages API stand-in as ANTHROPIC_BASE_URL);
- ``<!-- runs after the block above -->``: the same, in the namespace the file's
  previous ``runs`` block left (a continuation);
- ``<!-- not run: REASON -->``: never run, for the reason given (a fragment of
  the reader's own code, a long-running server, an install).

A block that looks runnable and carries neither fails the test: a new example
is run, or says why not.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
RUNNABLE_LANGS = {"python", "py", "bash", "sh", "shell", "console"}
COMMANDS = ("recap ", "python ", "python3 ", "pip ", "git ", "curl ", "cp ", "./", "export ",
            "docker ", "docker-compose ", "celery ", "uvicorn ", "createdb ", "$ ")
FENCE = re.compile(r"^(\s*)```(\S*)\s*$")
MARK = re.compile(r"^\s*<!--\s*(runs after the block above|runs|not run:(.*?))\s*-->\s*$")


@dataclass(frozen=True)
class Block:
    path: Path
    line: int  # of the opening fence, 1-based
    lang: str
    code: str
    marker: str | None  # "runs", "after", "not run", or None
    reason: str = ""

    @property
    def name(self) -> str:
        return f"{self.path.relative_to(ROOT)}:{self.line}"

    @property
    def looks_runnable(self) -> bool:
        if self.lang in RUNNABLE_LANGS:
            return True
        first = self.code.lstrip().split("\n", 1)[0]
        return not self.lang and first.startswith(COMMANDS)


def doc_files() -> list[Path]:
    """README.md and every page of the docs site, subfolders included."""
    return [ROOT / "README.md", *sorted((ROOT / "docs").rglob("*.md"))]


def blocks(path: Path) -> list[Block]:
    """Every fenced block of ``path``, in order, with its marker."""
    lines = path.read_text(encoding="utf-8").splitlines()
    out: list[Block] = []
    i = 0
    while i < len(lines):
        m = FENCE.match(lines[i])
        if not m:
            i += 1
            continue
        indent, lang = m.group(1), m.group(2)
        end = i + 1
        while end < len(lines) and not re.match(r"^\s*```\s*$", lines[end]):
            end += 1
        code = "\n".join(line[len(indent):] if line.startswith(indent) else line
                         for line in lines[i + 1:end]) + "\n"
        above = next((lines[k] for k in range(i - 1, -1, -1) if lines[k].strip()), "")
        mark = MARK.match(above)
        marker, reason = None, ""
        if mark:
            word = mark.group(1)
            marker = ("after" if word.startswith("runs after") else
                      "runs" if word == "runs" else "not run")
            reason = (mark.group(2) or "").strip()
        out.append(Block(path, i + 1, lang, code, marker, reason))
        i = end + 1
    return out


def all_blocks() -> list[Block]:
    return [b for path in doc_files() for b in blocks(path)]
