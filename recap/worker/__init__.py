"""What a worker process runs: the Celery app (``celery_app``), its thin tasks
(``tasks``), beat's schedule (``beat``) and the job pipeline (``jobs``).

Nothing here is imported for its side effects: the chat app's reply path reaches
``celery_app`` only to publish by task name, and never loads ``tasks`` or ``jobs``."""
