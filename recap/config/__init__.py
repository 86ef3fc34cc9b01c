"""Recap's settings, in groups a person can hold. Each group is a pydantic model of
its own module; recap.settings.Settings joins them and reads the environment.

docs/SETTINGS.md and .env.example are generated from these models
(``python -m recap.config.reference``); a test fails when either is stale.
"""
