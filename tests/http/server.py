"""A real ``recap serve`` subprocess (uvicorn) on a free port, for tests/http and bench."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Mapping, Sequence
from pathlib import Path

import httpx

from tests.helpers import free_port, wait_for
from tests.reliability.procs import start, stop, tail

KEYS = ("test-key-current", "test-key-previous")
# The console script of this interpreter's environment: what a user runs.
RECAP = str(Path(sys.executable).with_name("recap"))


class Server:
    """``recap serve`` started with ``env`` over this process's environment."""

    def __init__(self, *, log_dir: Path, env: Mapping[str, object] | None = None,
                 args: Sequence[str] = (), keys: Sequence[str] = KEYS) -> None:
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.log = log_dir / f"serve-{self.port}.log"
        self.keys = tuple(keys)
        self.env = {**os.environ, "RECAP_API_KEYS": ",".join(keys),
                    **{k: str(v) for k, v in (env or {}).items()}}
        self.args = list(args)
        self.proc: subprocess.Popen[bytes] | None = None

    def start(self, *, timeout: float = 60.0) -> Server:
        self.proc = start([RECAP, "serve", "--host", "127.0.0.1", "--port", str(self.port),
                           *self.args], log=self.log, env=self.env)

        def up() -> bool:
            assert self.proc is not None
            if self.proc.poll() is not None:
                raise RuntimeError(f"recap serve exited with {self.proc.returncode}:\n"
                                   f"{self.tail()}")
            try:
                return httpx.get(f"{self.url}/healthz", timeout=1).status_code == 200
            except httpx.TransportError:
                return False

        try:
            wait_for(up, timeout=timeout, interval=0.05, what="recap serve to answer /healthz")
        except AssertionError as exc:
            raise AssertionError(f"{exc}:\n{self.tail()}") from None
        return self

    def client(self, key: str | None = None) -> httpx.Client:
        """A client sending ``key`` (default: the first key; "" for none)."""
        key = self.keys[0] if key is None else key
        headers = {"Authorization": f"Bearer {key}"} if key else {}
        return httpx.Client(base_url=self.url, headers=headers, timeout=30)

    def stop(self) -> int:
        return stop(self.proc, grace=10) if self.proc is not None else 0

    def tail(self) -> str:
        return tail(self.log)

    def logged(self) -> str:
        return self.log.read_text(errors="replace") if self.log.exists() else ""
