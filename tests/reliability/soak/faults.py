"""The soak's faults: a Messages API stand-in that misbehaves on purpose (ChaosFake)
and a redis-server of the soak's own that it kills and restarts (SoakRedis)."""

from __future__ import annotations

import json
import random
import threading
from typing import Any

from recap.testing import FakeAnthropic, Reply, Request, default_summary, error, ok, recap_kind
from tests.reliability.procs import PrivateRedis

# Both this process (hook, sweeper) and the workers read these. Small batches and
# short limits so many jobs, retries and lease expiries happen in minutes; the
# lease/visibility/time-limit relations still satisfy Settings' checks.
SOAK_SETTINGS = {
    "RECAP_POLICY": "threshold",
    "RECAP_TRIGGER_MESSAGES": "20", "RECAP_TRIGGER_TOKENS": "200", "RECAP_BATCH_SIZE": "10",
    "RECAP_KEEP_RECENT": "6", "RECAP_MAX_RETRIES": "5", "RECAP_RETRY_BACKOFF_S": "0.2",
    "RECAP_RETRY_BACKOFF_MAX_S": "1", "RECAP_LLM_TIMEOUT_S": "4",
    "RECAP_TASK_SOFT_TIME_LIMIT_S": "5", "RECAP_TASK_TIME_LIMIT_S": "6", "RECAP_LEASE_S": "8",
    "RECAP_VISIBILITY_TIMEOUT_S": "10", "RECAP_ENQUEUE_STALE_S": "15",
    "RECAP_DEAD_COOLDOWN_S": "3", "RECAP_SUMMARIZER": "claude",
}
WORDS = ("budget invoice deploy kubernetes postgres latency refund airport hotel Lisbon "
         "March timeout retry customer schema migration release Friday Alice Bob").split()


class ChaosFake(FakeAnthropic):
    """The fake Messages API failing a share of calls: transient kinds and a permanent 400."""

    TRANSIENT = (error(429, "chaos: rate limited", headers={"retry-after": "0"}),
                 error(500, "chaos: internal error"), error(503, "chaos: unavailable"),
                 error(529, "chaos: overloaded"), Reply("reset"))

    def __init__(self, *, fail_rate: float, permanent_rate: float, seed: int,
                 lossy_rate: float = 0.0) -> None:
        self.fail_rate, self.permanent_rate = fail_rate, permanent_rate
        self.lossy_rate = lossy_rate
        self._rng = random.Random(seed)
        self._chaos_lock = threading.Lock()
        self.injected = {"transient": 0, "permanent": 0}
        # A SIGKILLed worker resets its connections; that is the point, not news.
        super().__init__(routes=[self._chaos], log_errors=False)

    def _chaos(self, request: Request) -> Reply | None:
        with self._chaos_lock:
            r, pick = self._rng.random(), self._rng.choice(self.TRANSIENT)
            if r < self.permanent_rate:
                self.injected["permanent"] += 1
                return error(400, "chaos: permanent failure for this request")
            if r < self.permanent_rate + self.fail_rate:
                self.injected["transient"] += 1
                return pick
            lossy = self._rng.random() < self.lossy_rate
            kind, n = self._rng.randrange(3), self._rng.randrange(10**6)
        return self._lossy(request.body, kind, n) if lossy else None

    def _lossy(self, body: dict[str, Any], kind: int, n: int) -> Reply | None:
        """An answer the database cannot store as is, or one cut off at max_tokens."""
        try:
            prompt = body["messages"][0]["content"]
            cap = int(body["max_tokens"])
        except (ValueError, KeyError, IndexError, TypeError):
            return None
        if not isinstance(prompt, str):
            return None
        cut_off = kind == 2
        if body.get("tools"):  # summary + facts in one tool call (memories on)
            name = ("extraction_nul_escape", "extraction_surrogate_escape",
                    "extraction_cut_off")[kind]
            escape = r"\u0000" if kind == 0 else r"\udc80"
            # JSON escapes: after parsing, a real NUL / a lone surrogate in a fact; the
            # cut-off answer is marked max_tokens and never applied.
            text = json.dumps({"summary": default_summary(prompt, 3 * cap), "facts": []})
            text = text[:-3] + (f'[{{"fact": "The user{escape} likes tea ({n})", '
                                '"category": "preference", "importance": 3}]}')
        elif recap_kind(body) is not None:
            what = "title" if recap_kind(body) == "title" else "summary"
            name = f"{what}_" + ("nul", "surrogate", "cut_off")[kind]
            text = default_summary(prompt, 3 * cap) if what == "summary" else f"Plans {n}"
            if cut_off:  # over-long: Recap must not apply an answer cut off at its cap
                text = text.replace("\n", " ") + " and then" * (4 * cap)
            elif kind == 0:
                text = text.replace(" ", " \x00", 1) + f"\x00 ({n})"
            else:
                text = text.replace(" ", " \udc80", 1) + f" \ud800 ({n})"
        else:
            return None
        with self._chaos_lock:
            self.injected[name] = self.injected.get(name, 0) + 1
        return ok(text, stop_reason="max_tokens") if kind == 2 else ok(text)


# The soak's own redis-server, killed and restarted under running jobs.
SoakRedis = PrivateRedis


def forget_broker_connections() -> None:
    """Drop this process's cached broker connections and producers (after a restart)."""
    from recap.worker.celery_app import app

    app._pool = None
    app.amqp._producer_pool = None


def forget_queue(queue: str, nodes: list[str]) -> None:
    """Remove what kombu leaves in Redis after the run: the queue's list and binding
    keys, and the pidbox bindings of this run's workers (``nodes``)."""
    from recap.worker.celery_app import app

    with app.connection_for_write() as conn:
        client = conn.default_channel.client
        client.delete(queue, f"_kombu.binding.{queue}", f"_kombu.binding_permanent.{queue}")
        pidbox = "_kombu.binding.celery.pidbox"
        mine = [m for m in client.smembers(pidbox)
                if any(f"{node}@" in m.decode(errors="replace") for node in nodes)]
        if mine:
            client.srem(pidbox, *mine)
        if not client.exists(pidbox):
            client.zrem("_kombu.binding_deadlines", "celery.pidbox")

