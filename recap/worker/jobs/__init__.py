"""The job path: what a worker runs. One summarize job end to end (claim, call the
model with no transaction open, retention guard, fenced apply), archive rebuilds,
titles, and the sweeper that heals lost enqueues."""
