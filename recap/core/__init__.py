"""Pure decisions and text: no I/O, no SQLAlchemy, Celery, SDK or settings imports.

Rooms, each a sub-package (import modules by their full path):

- ``planning``: whether and what to summarize now (the policy, the adaptive
  policy's sizing, the outlook that explains a plan that does not fire).
- ``retention``: the retention guard: what a fold must keep and how Recap keeps
  what the summary missed (salience, entries, details section, repairs).
- ``prompts``: what Recap sends a model and the answers that only give it back:
  the summarization and title prompts, bulk excerpts, echoes, frozen summaries.
- ``memories``: mined facts (parsed, attributed to who stated them), and which of
  them go into a context and how their block reads.
- ``context``: the context of the chat app's next Claude call: assembly, replay
  of stored turns, the request, recall from the archive.
- ``content``: a message's content made ready to store: content arrays
  validated, media measured, blocks rendered as text.

Shared by the rooms, at this level: ``specifics`` (the details a summary must not
lose), ``text`` (checks and clean-ups), ``validate`` (what callers pass in) and
``tenant`` (the namespace of ids). The rooms' direction is checked by
import-linter (pyproject.toml): retention, context and planning above prompts,
memories and content, which sit above the shared modules.
"""
