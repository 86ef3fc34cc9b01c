"""``recap eval``: what Recap and its peers keep of planted facts (recap.evals.main),
run offline against the Messages API stand-in of :mod:`recap.testing`."""
