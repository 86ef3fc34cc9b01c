"""The defaults' verdict (``python -m bench --quick``): Recap's defaults against
LangChain, LangMem and full history with caching, on seven generated workloads.

- shapes.py: what a workload is (sessions, planted facts, references back);
- workloads.py, referring.py: the seven workloads, from a fixed seed;
- drive.py: every system over a workload, with the requests each sends;
- judge.py: answerable at reference;
- main.py: pricing, the tables and the verdict (``run``).
"""
