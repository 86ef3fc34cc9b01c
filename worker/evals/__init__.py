"""``recap eval``: what Recap and its peers keep of planted facts (worker.evals.main),
run offline against the Messages API stand-in of :mod:`worker.testing`."""
