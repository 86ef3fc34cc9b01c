"""What the chat app calls on a whole session, outside the reply path: rewind and
edit, forget, summary history and per-session overrides."""
