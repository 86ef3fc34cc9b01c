"""The job path: what a worker runs. One summarize job is a pipeline of steps
(summarize.py calls them in order: claim, render, call, retain, apply; failure.py
records a job that did not apply), archive rebuilds, titles, and the sweeper that
heals lost enqueues."""
