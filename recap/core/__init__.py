"""Pure decisions and text: no I/O, no SQLAlchemy, Celery, SDK or settings imports."""
