"""The Claude edge: one client configuration, the summarizer (which also mines memories),
the title call, token counting and the prompt templates."""
