"""Adapters for agent frameworks. Each module imports its framework lazily, so
Recap's core never needs one installed."""
