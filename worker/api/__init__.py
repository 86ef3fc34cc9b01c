"""What the chat app calls: ingest, context, per-session settings, input validation.

Importing this package loads neither the SDK, the summarizer nor Celery's
worker machinery: jobs are published by task name.
"""
