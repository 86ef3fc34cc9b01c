"""``recap check``: one cheap Claude call that proves the model name and the API key
work, or says which is wrong (exit 1): a refused key (401/403) or an unknown
model (404), or the server it could not reach. Each verdict names the server; one
that is not api.anthropic.com (ANTHROPIC_BASE_URL) proves it answered, not that an
Anthropic key works. With the offline summarizer there is no call to check (exit 0).
"""

from __future__ import annotations

import argparse

from recap.cli.base import Subparsers, command, err


def register(sub: Subparsers) -> None:
    command(sub, "check", "Prove the model name and API key work with one cheap call "
                          "(or say which is wrong).", run)


def run(args: argparse.Namespace) -> int:
    from recap.llm.probe import probe
    from recap.worker.jobs.resources import get_resources

    res = get_resources()  # ConfigError (no key, bad settings) comes out as recap: error
    if res.client is None:
        print("RECAP_SUMMARIZER=offline: no Claude call to check")
        return 0
    result = probe(res.client)
    if result.ok:
        print(f"ok: {result.message}")
        return 0
    err(f"error: {result.problem}: {res.redact(result.message)}")
    return 1
