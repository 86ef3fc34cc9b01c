"""``recap eval``: what Recap and its peers keep of planted facts (worker.evals.main),
and the local stand-in of the Messages API it runs against offline (fake_api,
standin), which the test suite and the benchmarks share."""
