"""Rows and markers that every room shares: memory reads (recall), row helpers
for fenced transactions (rows) and the pending-job marker with its publish
(enqueue). Helpers take the database session as ``db=`` and never commit."""
