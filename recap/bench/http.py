"""Benchmark: the HTTP API (``recap serve``) against the in-process calls.

- per-call p50/p99 of each reply-path endpoint (POST messages, replied, context)
  and of one whole reply (2 x messages + replied + context), over HTTP with a
  keep-alive client and in-process (recap.api), on the same database, one call
  at a time, one in-process reply then one over HTTP (so a busy moment of a
  shared machine weighs on both alike); the difference is what the HTTP layer
  adds (the server: uvicorn, the ASGI layer, JSON, the thread hop; the network
  stack; and a lean client's own time: the standard library's keep-alive
  ``http.client``, about what a Node ``fetch`` or Go client costs). The round trip
  of ``GET /healthz`` is taken with that client and with httpx, so what a heavier
  Python client adds on its own is printed too;
- requests/s of one server process (``--workers 1``) under 32 concurrent clients
  (asyncio, one connection each), each running replies back to back.

No summary is queued (conversations stay under RECAP_TRIGGER_MESSAGES), so the
figures are the reply path alone. Targets: HTTP adds at most 2 ms p50 to
``messages`` and ``replied``; one reply over HTTP within 2x of in-process at p50.
The Claude stand-in is not called at all here.

``recap bench --only http [--quick]``; the bench extra brings the server (FastAPI,
uvicorn) and the client (httpx).
"""

from __future__ import annotations

import asyncio
import functools
import os
import subprocess
import sys
import tempfile
import time
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Any

from recap.bench.harness import env as benv
from recap.bench.harness.extras import need
from recap.bench.harness.stats import ms, percentile, report, table

KEY = "bench-http-key"
CLIENTS = 32
SYSTEM = benv.SYSTEM_PROMPT
ENDPOINTS = ("messages", "replied", "context", "reply")
USER = "How do I rotate the nginx logs on the edge hosts without dropping connections?"
ASSISTANT = ("Use logrotate with copytruncate, or send USR1 to the master process after "
             "moving the file: nginx reopens its logs without dropping connections.")


class Serve:
    """``recap serve --workers 1`` on a free port, with the bench environment."""

    def __init__(self) -> None:
        self.port = benv.free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.log = Path(tempfile.mkstemp(prefix="recap-bench-serve-", suffix=".log")[1])
        recap = str(Path(sys.executable).with_name("recap"))
        with open(self.log, "wb") as out:
            self.proc = subprocess.Popen(
                [recap, "serve", "--host", "127.0.0.1", "--port", str(self.port),
                 "--workers", "1"], stdout=out, stderr=subprocess.STDOUT,
                env={**os.environ, "RECAP_API_KEYS": KEY}, start_new_session=True)
        httpx = need("httpx")
        deadline = time.monotonic() + 60
        while True:
            try:
                if httpx.get(f"{self.url}/healthz", timeout=1).status_code == 200:
                    return
            except httpx.TransportError:
                pass
            if self.proc.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError(f"recap serve did not start:\n{self.log.read_text()[-2000:]}")
            time.sleep(0.05)

    def stop(self) -> None:
        self.proc.terminate()
        try:
            self.proc.wait(15)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
        self.log.unlink(missing_ok=True)


STEPS = ("user", "assistant", "replied", "context")


def _reply(step: Callable[[str], Any], times: dict[str, list[float]]) -> None:
    """One reply: the user's turn, the assistant's, the hook, the next context."""
    started = time.perf_counter()
    for name in STEPS:
        t0 = time.perf_counter()
        step(name)
        times["messages" if name in ("user", "assistant") else name].append(
            time.perf_counter() - t0)
    times["reply"].append(time.perf_counter() - started)


def in_process_step(sid: str, turn: int, name: str) -> None:
    """One step of a reply, in-process (recap.api)."""
    from recap.api.context import build_context
    from recap.api.ingest import add_message, after_reply

    if name == "user":
        add_message(sid, "user", f"{USER} ({turn})")
    elif name == "assistant":
        add_message(sid, "assistant", ASSISTANT)
    elif name == "replied":
        after_reply(sid)
    else:
        build_context(sid, system_prompt=SYSTEM)


def _request(base: str, turn: int, name: str) -> tuple[str, Any]:
    """(path, JSON body) of one step of a reply over HTTP."""
    if name == "user":
        return f"{base}/messages", {"role": "user", "content": f"{USER} ({turn})"}
    if name == "assistant":
        return f"{base}/messages", {"role": "assistant", "content": ASSISTANT}
    if name == "replied":
        return f"{base}/replied", None
    return f"{base}/context", {"system_prompt": SYSTEM}


class Lean:
    """A keep-alive client on the standard library's ``http.client``: a request is
    one write and one read, with no more client work than a Node ``fetch`` or a Go
    ``http.Client`` does, so the figures are the server's and the network's."""

    def __init__(self, url: str) -> None:
        import http.client
        from urllib.parse import urlsplit

        parts = urlsplit(url)
        self.conn = http.client.HTTPConnection(parts.hostname or "127.0.0.1", parts.port,
                                               timeout=30)

    def send(self, method: str, path: str, body: Any = None, *, auth: bool = True) -> bytes:
        import json

        headers = {"Authorization": f"Bearer {KEY}"} if auth else {}
        data = None
        if body is not None or method == "POST":
            data = b"" if body is None else json.dumps(body).encode()
            headers["Content-Type"] = "application/json"
        self.conn.request(method, path, body=data, headers=headers)
        answer = self.conn.getresponse()
        out = answer.read()
        if answer.status >= 400:
            raise RuntimeError(f"{method} {path}: {answer.status} {out[:300]!r}")
        return out

    def close(self) -> None:
        self.conn.close()


def side_by_side(url: str, sessions: int, turns: int, prefix: str
                 ) -> tuple[dict[str, list[float]], dict[str, list[float]]]:
    """(in-process, HTTP) times of ``sessions`` x ``turns`` replies each way, one
    in-process reply then one over HTTP, so both see the same machine: on a shared
    one, the load of the moment weighs on both alike."""
    local: dict[str, list[float]] = {k: [] for k in ENDPOINTS}
    remote: dict[str, list[float]] = {k: [] for k in ENDPOINTS}
    client = Lean(url)
    try:
        def http_step(base: str, turn: int, name: str) -> None:
            client.send("POST", *_request(base, turn, name))

        for turn in range(turns):
            for s in range(sessions):
                _reply(functools.partial(in_process_step, f"in-{prefix}-{s}", turn), local)
                _reply(functools.partial(http_step, f"/v1/sessions/http-{prefix}-{s}", turn),
                       remote)
    finally:
        client.close()
    return local, remote


def _floor(url: str, n: int) -> tuple[list[float], list[float]]:
    """Round trips of GET /healthz (no thread, no database), with the lean client and
    with httpx, alternated: the cost of HTTP itself on this machine at this moment,
    and what httpx adds on its own."""
    import httpx

    lean_times: list[float] = []
    httpx_times: list[float] = []
    lean = Lean(url)
    try:
        with httpx.Client(base_url=url, timeout=30) as client:
            for _ in range(n):
                t0 = time.perf_counter()
                lean.send("GET", "/healthz", auth=False)
                lean_times.append(time.perf_counter() - t0)
                t0 = time.perf_counter()
                client.get("/healthz").raise_for_status()
                httpx_times.append(time.perf_counter() - t0)
    finally:
        lean.close()
    return lean_times, httpx_times


async def _load(url: str, seconds: float, prefix: str) -> tuple[int, float, int]:
    """(requests, elapsed seconds, errors) of CLIENTS clients running replies."""
    import httpx

    done = errors = 0
    stop_at = time.monotonic() + seconds

    async def client(i: int) -> None:
        nonlocal done, errors
        async with httpx.AsyncClient(base_url=url, timeout=60,
                                     headers={"Authorization": f"Bearer {KEY}"}) as c:
            base, turn = f"/v1/sessions/{prefix}-{i}", 0
            while time.monotonic() < stop_at:
                turn += 1
                if turn > 12:  # stay under the trigger: the reply path alone
                    base, turn = f"/v1/sessions/{prefix}-{i}-{uuid.uuid4().hex[:6]}", 1
                for name in STEPS:
                    path, body = _request(base, turn, name)
                    r = await c.post(path, json=body)
                    done += 1
                    errors += r.status_code >= 400

    started = time.monotonic()
    await asyncio.gather(*(client(i) for i in range(CLIENTS)))
    return done, time.monotonic() - started, errors


def run(quick: bool = False) -> str:
    sessions, turns, load_s = (10, 5, 5.0) if quick else (20, 10, 15.0)
    for module in ("httpx", "fastapi", "uvicorn"):
        need(module)
    benv.setup()
    server = Serve()
    try:
        run_id = uuid.uuid4().hex[:6]
        # Engines, tokenizer and statement caches first.
        side_by_side(server.url, 4, 3, f"warm-{run_id}")
        local, remote = side_by_side(server.url, sessions, turns, run_id)
        floor, floor_httpx = _floor(server.url, sessions * turns)
        requests, elapsed, errors = asyncio.run(_load(server.url, load_s, f"load-{run_id}"))
    finally:
        server.stop()
    rows = []
    for name in ENDPOINTS:
        a, b = local[name], remote[name]
        p50a, p50b = percentile(a, 50), percentile(b, 50)
        rows.append([name, len(b), ms(p50a), ms(percentile(a, 99)), ms(p50b),
                     ms(percentile(b, 99)), f"+{(p50b - p50a) * 1000:.2f}",
                     f"{p50b / p50a:.2f}x"])
    rows.append(["GET /healthz (HTTP alone)", len(floor), "-", "-", ms(percentile(floor, 50)),
                 ms(percentile(floor, 99)), "-", "-"])
    rows.append(["GET /healthz with httpx as the client", len(floor_httpx), "-", "-",
                 ms(percentile(floor_httpx, 50)), ms(percentile(floor_httpx, 99)),
                 f"+{(percentile(floor_httpx, 50) - percentile(floor, 50)) * 1000:.2f} "
                 "(httpx's own)", "-"])
    body = table(["call", "n", "in-process p50 ms", "p99 ms", "HTTP p50 ms", "p99 ms",
                  "HTTP adds (p50 ms)", "HTTP / in-process"], rows)
    body += (f"\n\nOne `recap serve --workers 1` under {CLIENTS} concurrent clients (replies "
             f"back to back, {load_s:.0f} s): **{requests / elapsed:.0f} requests/s** "
             f"({requests} requests, {errors} errors). Targets: HTTP adds <= 2 ms p50 to "
             "messages and replied; a reply over HTTP within 2x of in-process at p50. "
             "The per-call client (the standard library's keep-alive http.client) and the "
             "load clients (httpx, asyncio) run in the benchmark process on the same "
             "machine; load "
             f"average at the end: {', '.join(f'{x:.2f}' for x in os.getloadavg())}.")
    return report(f"http: the HTTP API against in-process calls ({sessions} sessions x "
                  f"{turns} replies each way)", body)
