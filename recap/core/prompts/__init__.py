"""What Recap sends a model, and answers that only give it back (pure).

The summarization prompt with its rendering and chunking (``summarize``), excerpts
of pasted bulk content (``bulk``), the title prompt and title clean-up
(``titles``); Recap's own words echoed in an answer (``echo``) and a summary that
ignored the new messages (``frozen``). Loading templates and calling the model is
the Claude edge's job (recap.llm)."""
