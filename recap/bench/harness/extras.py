"""The bench extra's packages (plots, memory sampling, the peers, the CPU profiler),
imported only by the benchmarks that use them: ``recap bench`` itself runs on
Recap's own dependencies, and a benchmark that needs more says which install
brings it."""

from __future__ import annotations

import importlib
from types import ModuleType

from recap.errors import RecapError

INSTALL = "pip install 'recap-worker[bench]'"
# What each peer benchmark imports: LangMem's summarize_messages, LangChain's
# SummarizationMiddleware, and ChatAnthropic pointed at the stand-in.
PEER_MODULES = ("langmem.short_term", "langchain.agents.middleware", "langchain_anthropic")


class MissingExtra(RecapError):
    """A benchmark needs a package of the bench extra that is not installed."""


def need(module: str) -> ModuleType:
    """``module`` imported; MissingExtra (naming the install) when it is not installed."""
    try:
        return importlib.import_module(module)
    except ImportError as exc:
        missing = exc.name or module
        raise MissingExtra(f"this benchmark needs {missing}, which the bench extra "
                           f"installs: {INSTALL}") from None


def pyplot() -> ModuleType:
    """matplotlib.pyplot on the file-only Agg backend (no display needed)."""
    need("matplotlib").use("Agg")
    return need("matplotlib.pyplot")


def peers() -> None:
    """Raise MissingExtra unless the peers the comparison runs are installed."""
    for module in PEER_MODULES:
        need(module)
