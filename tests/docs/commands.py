"""Every ``recap ...`` command the docs and the ``--help`` texts show, as argv lists.

Where they are found: inline code spans of README.md and docs/**/*.md, each line of
their code blocks (shell lines split at ``&&``, ``;``, ``|`` and ``&``; a ``#``
comment is read like prose), and every description, epilog and option help of the
real parser (``recap ... --help``); in a block line or a help line that has inline spans,
only its spans. A command is ``recap`` followed by one of the parser's command
names; it runs to the end of its span, line or shell command.

A synopsis is expanded into the commands it stands for: ``[--now | --force]``
gives none, ``--now`` and ``--force``; ``ID | --all-dead`` gives ``ID`` and
``--all-dead`` (an alternative is one option with its values, or one positional
word). Placeholders (``SESSION_ID``, ``MSG``, ``DIR``, ``key=...``) are filled
with sample values by the test that runs them (:data:`PLACEHOLDERS`).
"""

from __future__ import annotations

import argparse
import itertools
import re
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from tests.docs.blocks import FENCE, ROOT, doc_files

# Inline code spans (one backtick each side), at most across one line break.
SPAN = re.compile(r"(?<!`)`([^`\n]+(?:\n[^`\n]+)?)`(?!`)")
SHELL_SPLIT = re.compile(r"&&|\|\||;|\||&")
# Placeholder words of a synopsis: filled in by the test.
PLACEHOLDERS = ("ID", "SESSION_ID", "SESSION", "MSG", "N", "DIR", "TEXT", "JSON", "KIND",
                "URL", "NAME", "NAMES", "REVISION")


@dataclass(frozen=True)
class Example:
    """One command as written, where it is written, and the argv lists it stands for."""

    where: str  # README.md:397, or `recap configure --help`
    text: str  # the command as written, from `recap` on
    variants: tuple[tuple[str, ...], ...]  # argv after `recap`, placeholders unfilled

    @property
    def name(self) -> str:
        return f"{self.where}: recap {self.text}"


def command_names(parser: argparse.ArgumentParser) -> set[str]:
    """The parser's command names (``recap worker`` and ``beat`` included)."""
    return {name for action in parser._actions
            if isinstance(action, argparse._SubParsersAction) for name in action.choices}


def commands_in(snippet: str, *, names: set[str]) -> Iterator[list[str]]:
    """The command of one span, line or shell command: the words after the first
    ``recap`` that is followed by a command name, to the end of ``snippet``."""
    words = [word.strip("`") for word in snippet.split()]
    for i, word in enumerate(words[:-1]):
        if word.lstrip("(\"'") == "recap" and words[i + 1] in names:
            tail = words[i + 1:]
            # The end of a sentence is not the command's (a placeholder's "..." is).
            last = tail[-1].rstrip(")")
            tail[-1] = last if last.endswith("...") else last.rstrip(".,;:")
            yield [t for t in tail if t]
            return


def snippets(path: Path) -> Iterator[tuple[int, str]]:
    """(line, text) of every inline span outside code blocks, and every command of
    every code block line (its comment read like prose)."""
    lines = path.read_text(encoding="utf-8").splitlines()
    prose = list(lines)
    in_block = False
    for number, line in enumerate(lines, 1):
        if FENCE.match(line):
            in_block = not in_block
            prose[number - 1] = ""
            continue
        if not in_block:
            continue
        prose[number - 1] = ""
        spans = SPAN.findall(line)
        if spans:  # a listing's prose (a tree, a table): its spans are the commands
            yield from ((number, span) for span in spans)
            continue
        comment = re.search(r"(?:^|\s)#", line)
        code = line[:comment.start()] if comment else line
        for part in SHELL_SPLIT.split(code):
            yield number, part
        if comment:
            yield number, line[comment.end():]
    text = "\n".join(prose)
    for match in SPAN.finditer(text):
        yield text.count("\n", 0, match.start()) + 1, " ".join(match.group(1).split())


def expand(words: list[str]) -> list[tuple[str, ...]]:
    """The argv lists a synopsis stands for (a plain command: itself)."""
    items: list[list[list[str]]] = []  # each: the alternatives for one place
    i = 0
    while i < len(words):
        word = words[i]
        if word.startswith("["):
            end = next(j for j in range(i, len(words)) if words[j].endswith("]"))
            inner = " ".join(words[i:end + 1])[1:-1].split()
            items.append([[], *_alternatives(inner)])
            i = end + 1
        elif word == "|" and items:
            right_end = _group_end(words, i + 1)
            left = _last_group(items)
            items.append([left, words[i + 1:right_end]])
            i = right_end
        else:
            items.append([[word]])
            i += 1
    return [tuple(w for part in combo for w in part) for combo in itertools.product(*items)]


def _alternatives(words: list[str]) -> list[list[str]]:
    out: list[list[str]] = [[]]
    for word in words:
        if word == "|":
            out.append([])
        else:
            out[-1].append(word)
    return out


def _group_end(words: list[str], start: int) -> int:
    """Where the alternative starting at ``start`` ends: an option and its values,
    or one positional word."""
    if not words[start].startswith("-"):
        return start + 1
    end = start + 1
    while end < len(words) and not words[end].startswith(("-", "[", "|")):
        end += 1
    return end


def _last_group(items: list[list[list[str]]]) -> list[str]:
    """Take the alternative left of a ``|`` off ``items``: the last positional word,
    or the last option with its one value."""
    [[word]] = items.pop()
    taken = [word]
    if (not word.startswith("-") and items and len(items[-1]) == 1
            and items[-1][0][:1] and items[-1][0][0].startswith("-")):
        taken.insert(0, items.pop()[0][0])
    return taken


def doc_examples(names: set[str]) -> list[Example]:
    """Every command of README.md and docs/**/*.md."""
    found: dict[tuple[str, str], Example] = {}
    for path in doc_files():
        for line, snippet in snippets(path):
            for words in commands_in(snippet, names=names):
                where = f"{path.relative_to(ROOT)}:{line}"
                found.setdefault((where, " ".join(words)),
                                 Example(where, " ".join(words), tuple(expand(words))))
    return list(found.values())


def help_examples(parser: argparse.ArgumentParser, names: set[str],
                  prog: str = "recap") -> list[Example]:
    """Every command in a description, epilog or option help of ``parser`` and of
    each of its commands."""
    texts = [parser.description or "", parser.epilog or "",
             *(action.help or "" for action in parser._actions)]
    out = [Example(f"`{prog} --help`", " ".join(words), tuple(expand(words)))
           for text in texts for line in text.splitlines()
           for span in ([m.group(1) for m in SPAN.finditer(line)] or [line])
           for words in commands_in(span, names=names)]
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for name, sub in action.choices.items():
                out += help_examples(sub, names, prog=f"{prog} {name}")
    return out
