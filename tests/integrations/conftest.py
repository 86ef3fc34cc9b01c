"""The Agents SDK exports traces to OpenAI by default: not from tests."""

from __future__ import annotations

from agents import set_tracing_disabled

set_tracing_disabled(True)
