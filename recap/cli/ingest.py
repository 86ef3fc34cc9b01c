"""``recap ingest [--strict] [FILE]``: add messages from JSON lines, in order.

Each line is ``{"session_id", "role", "content", "pinned"}`` (``pinned`` optional;
``content`` a string or a Messages API content array, as ``add_message`` takes).
A bad line is reported on stderr with its number and reason and skipped (every
valid line is still stored), and the exit code is then 1; ``--strict`` stops at
the first one. After each assistant message the reply hook runs
(``after_reply``, as a chat app calls it after its reply): it may queue a
summarize job and, after a session's first exchange, a title job. Ends with
``added N, bad N, summarize jobs queued N, title jobs queued N``. On a terminal,
stderr shows a line each time another tenth of a file is read (or, reading a
stream of unknown size, every STREAM_STEP lines), with what is left.
"""

from __future__ import annotations

import argparse
import io
import os
import stat
import sys
from typing import IO, Any

from recap.cli.base import Progress, Subparsers, command, err

# Progress on a terminal: a line per tenth of a file, or per this many lines of a
# stream whose size is not known (a pipe).
TENTHS = 10
STREAM_STEP = 1000
CHUNK_BYTES = 1 << 20  # counting a file's lines, a megabyte at a time
REQUIRED_FIELDS = ("session_id", "role", "content")
KNOWN_FIELDS = frozenset((*REQUIRED_FIELDS, "pinned"))


def register(sub: Subparsers) -> None:
    p = command(sub, "ingest", "Add messages from JSON lines "
                '({"session_id", "role", "content", "pinned"}), in order.', run)
    p.epilog = ("The reply hook (after_reply) runs after each assistant message, as in a chat "
                "app: it may queue a summarize job, and after a session's first "
                "user/assistant exchange a title job. User, system and tool messages are only "
                "stored. Ends with: added N, bad N, summarize jobs queued N, title jobs "
                "queued N. Exit code 1 if any line was rejected (each is reported with its "
                "number and reason; the valid ones are stored).")
    p.add_argument("file", nargs="?", default="-", metavar="FILE",
                   help="JSON-lines file; '-' or nothing reads stdin")
    p.add_argument("--strict", action="store_true", help="stop with exit 1 at the first bad line")


def run(args: argparse.Namespace) -> int:
    counts = {"added": 0, "bad": 0, "queued": 0, "titles": 0, "line": 0}
    try:
        with _open_input(args.file) as stream:
            code = _ingest(stream, counts, strict=args.strict)
    except KeyboardInterrupt:
        # A migration resumes from here: every line before this one is stored.
        err(f"interrupted at line {counts['line']}; lines before it were processed")
        code = 130
    print(f"added {counts['added']}, bad {counts['bad']}, summarize jobs queued "
          f"{counts['queued']}, title jobs queued {counts['titles']}")
    return code


def parse_line(line: str) -> tuple[str, str, Any, bool]:
    """One JSON line -> (session_id, role, content, pinned); InvalidInput names the problem."""
    from recap.core.validate import json_object
    from recap.errors import InvalidInput

    record = json_object(line)
    missing = [f for f in REQUIRED_FIELDS if f not in record]
    if missing:
        raise InvalidInput("missing field " + ", ".join(missing))
    # A typo such as "pined" must not silently drop a pin: pinned messages are
    # the ones Recap promises never to summarize away.
    unknown = sorted(set(record) - KNOWN_FIELDS)
    if unknown:
        raise InvalidInput("unknown field " + ", ".join(unknown))
    return record["session_id"], record["role"], record["content"], record.get("pinned", False)


def _open_input(name: str) -> IO[str]:
    # surrogateescape: a line with broken UTF-8 becomes one bad line (add_message
    # rejects lone surrogates), instead of aborting the whole file.
    if name == "-":
        buffer = getattr(sys.stdin, "buffer", None)
        if buffer is None:
            return sys.stdin
        return io.TextIOWrapper(buffer, encoding="utf-8", errors="surrogateescape")
    try:
        return open(name, encoding="utf-8", errors="surrogateescape")
    except OSError as exc:
        from recap.errors import InvalidInput

        raise InvalidInput(f"cannot read {name}: {exc.strerror}") from None


class Reading:
    """Progress lines for the lines being ingested (on a terminal only): a line per
    tenth of a file whose lines were counted first, or every STREAM_STEP lines of
    a stream of unknown length (a pipe)."""

    def __init__(self, stream: IO[str], counts: dict[str, int]) -> None:
        self.progress, self.counts = Progress("ingest"), counts
        self.total = _count_lines(stream) if self.progress.on else None
        self.shown = 0  # tenths of the file shown so far

    def done(self, number: int) -> None:
        """Lines up to ``number`` are ingested."""
        if not self.progress.on:
            return
        if self.total is None:
            due = number % STREAM_STEP == 0
        else:
            tenths = number * TENTHS // self.total
            due, self.shown = tenths > self.shown, max(self.shown, tenths)
        if due:
            self.progress.step(number, self.total, "lines",
                               f"added {self.counts['added']}, bad {self.counts['bad']}")


def _count_lines(stream: IO[str]) -> int | None:
    """The lines of a regular file behind ``stream``, counted without moving its
    offset (None: a pipe or a terminal, whose length is not known in advance)."""
    try:
        fd = stream.fileno()
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            return None
    except (OSError, ValueError, io.UnsupportedOperation):
        return None
    lines, offset, last = 0, 0, b"\n"
    while chunk := os.pread(fd, CHUNK_BYTES, offset):
        lines += chunk.count(b"\n")
        offset, last = offset + len(chunk), chunk[-1:]
    return (lines + (last != b"\n")) or None


def _ingest(stream: IO[str], counts: dict[str, int], *, strict: bool) -> int:
    reading = Reading(stream, counts)
    for number, line in enumerate(stream, start=1):
        counts["line"] = number
        if not _one(line, number, counts) and strict:
            err(f"stopped at line {number} (--strict)")
            return 1
        reading.done(number)
    return 1 if counts["bad"] else 0


def _one(line: str, number: int, counts: dict[str, int]) -> bool:
    """Store one line (and run the hook after an assistant message); False if it
    was refused (reported on stderr, counted as bad)."""
    from recap.api.ingest import add_message, reply_jobs
    from recap.errors import InvalidInput

    if not line.strip():
        return True
    try:
        session_id, role, content, pinned = parse_line(line)
        add_message(session_id, role, content, pinned=pinned)
    except InvalidInput as exc:
        counts["bad"] += 1
        err(f"line {number}: {exc}")
        return False
    counts["added"] += 1
    if role == "assistant":
        sent = reply_jobs(session_id)
        counts["queued"] += sent.summarize
        counts["titles"] += sent.title
    return True
