"""The lab's tests: pure ones in-process, runs as subprocesses (each with its own
database, queue and stand-in, as ``python -m bench`` makes them). They need no
fixture of tests/ (the two folders import nothing of each other); only the offline
tiktoken encodings, when the machine keeps them beside the checkout."""

from __future__ import annotations

from recap.bench.harness.env import use_offline_encodings

use_offline_encodings()
