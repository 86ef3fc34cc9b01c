"""Whether and what to summarize (pure): the policy's plan over a session's
messages, the adaptive policy's sizing from the session's counters and the prompt
cache's prices, and the outlook that says why a session is (not) summarized now."""
