"""The benchmark lab, run from a checkout (``python -m bench``): the defaults' verdict
(verdict/), comparisons against git refs (compare), reach, the real-model runs
(realmodel/) and the metrics scrape at scale (metrics_scale). It uses the installed
package (recap.bench's harness and benchmarks); nothing in recap imports it, and it
and tests/ import nothing of each other. Its own tests are in bench/tests/."""
