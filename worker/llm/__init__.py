"""The Claude edge: one client configuration, the summarizer, the memory extractor,
the title call, token counting and the prompt templates."""
