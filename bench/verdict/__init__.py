"""The defaults' verdict (``python -m bench --quick``): Recap's defaults against
LangChain, LangMem, full history with caching, full history with tool-result
clearing and with server-side compaction, on nine generated workloads.

- shapes.py: what a workload is (sessions, planted facts, references back, pauses);
- workloads.py, referring.py, analyst.py, travel.py: the nine workloads, from a
  fixed seed; asked.py: later turns referring back, added to four of them;
- clearing.py: the Messages API's tool-result clearing, as a peer;
- compaction.py: the Messages API's server-side compaction, as a peer;
- drive.py: every system over a workload, with the requests each sends;
- judge.py: answerable at reference;
- main.py: pricing, the tables and the verdict (``run``).
"""
