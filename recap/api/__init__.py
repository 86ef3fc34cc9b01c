"""The reply path: what the chat app calls on every reply (``add_message``,
``after_reply``, ``build_context``), sync (ingest, context) and asyncio (aio).

Importing this package loads neither the SDK, the summarizer, the job pipeline
nor Celery's worker machinery: jobs are published by task name.
"""
