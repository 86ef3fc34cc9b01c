"""``recap tokenizer export DIR``: copy tiktoken's cached encoding file into DIR,
for machines that cannot download it.

Recap counts tokens with tiktoken's ``cl100k_base``. tiktoken downloads its BPE
file on first use and caches it in TIKTOKEN_CACHE_DIR (else DATA_GYM_CACHE_DIR,
else ``<tmp>/data-gym-cache``), under the sha1 of the download URL; on load it
checks the file's sha256. On a machine with internet access this command loads
the encoding (downloading it if needed), copies the cached file into DIR and
prints the line to use on the offline machine, after copying DIR there::

    export TIKTOKEN_CACHE_DIR=/abs/path/DIR

The file name and contents do not depend on the machine or the Python version.
"""

from __future__ import annotations

import argparse
import hashlib
import os
import sys
import tempfile
from pathlib import Path

from recap.cli.base import Subparsers, command

# tiktoken_ext.openai_public: where tiktoken downloads cl100k_base from, and the
# sha256 it checks the file against.
ENCODING_URL = "https://openaipublic.blob.core.windows.net/encodings/cl100k_base.tiktoken"
ENCODING_SHA256 = "223921b76ee99bde995b7ff738513eef100fb51d18c93597a113bcffe865b2a7"


def register(sub: Subparsers) -> None:
    p = command(sub, "tokenizer", "Export tiktoken's encoding file for offline machines "
                "(tokenizer export DIR).", run)
    actions = p.add_subparsers(dest="action", required=True, metavar="ACTION")
    export = actions.add_parser(
        "export", help="copy the cached cl100k_base file into DIR and print the "
        "TIKTOKEN_CACHE_DIR line for the offline machine",
        description="Load tiktoken's cl100k_base (downloading it if it is not cached), copy "
        "its cache file into DIR, and print `export TIKTOKEN_CACHE_DIR=DIR` for the machine "
        "that cannot download it. Run it where the encoding loads: a connected machine, or "
        "one whose TIKTOKEN_CACHE_DIR already holds it.")
    export.add_argument("directory", metavar="DIR", help="created if missing")


def cache_name(url: str = ENCODING_URL) -> str:
    """The file name tiktoken caches ``url`` under: the sha1 of the URL."""
    return hashlib.sha1(url.encode()).hexdigest()  # tiktoken's cache key


def cache_dir() -> Path | None:
    """Where tiktoken caches files in this environment (its own rules); None: caching off."""
    for name in ("TIKTOKEN_CACHE_DIR", "DATA_GYM_CACHE_DIR"):
        if name in os.environ:
            return Path(os.environ[name]) if os.environ[name] else None
    return Path(tempfile.gettempdir()) / "data-gym-cache"


def run(args: argparse.Namespace) -> int:
    from recap.errors import ConfigError, InvalidInput
    from recap.llm.tokens import ENCODING, count_tokens

    source_dir = cache_dir()
    if source_dir is None:
        raise ConfigError("TIKTOKEN_CACHE_DIR is empty, which turns tiktoken's cache off: "
                          "unset it (or name a directory) so there is a file to export")
    count_tokens("hello")  # loads the encoding: downloads and caches it if needed
    source = source_dir / cache_name()
    try:
        data = source.read_bytes()
    except OSError as exc:
        raise ConfigError(f"tiktoken loaded {ENCODING} but its cache file is not at {source} "
                          f"({exc.strerror}); is this tiktoken's download URL still "
                          f"{ENCODING_URL}?") from None
    if hashlib.sha256(data).hexdigest() != ENCODING_SHA256:
        raise ConfigError(f"{source} does not hold {ENCODING} (sha256 mismatch); delete it "
                          "and run this again to download it afresh")
    target_dir = Path(args.directory).expanduser().resolve()
    target = target_dir / source.name
    try:
        target_dir.mkdir(parents=True, exist_ok=True)
        if target.resolve() != source.resolve():
            partial = target.with_name(target.name + ".partial")
            partial.write_bytes(data)
            partial.replace(target)
    except OSError as exc:
        raise InvalidInput(f"cannot write {target}: {exc.strerror}") from None
    print(f"copied {ENCODING} ({len(data):,} bytes) to {target}; copy {target_dir} to the "
          "offline machine and set there:", file=sys.stderr)
    print(f"export TIKTOKEN_CACHE_DIR={target_dir}")
    return 0
