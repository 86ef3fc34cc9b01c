"""`recap demo`: the real pipeline on the embedded default, with its scripted conversation."""
