"""Memories (pure): the facts a model mined from a batch, parsed (``facts``) and
attributed to who stated them (``provenance``); which go into a context
(``recall``) and the ``<MEMORIES>`` block they make (``block``)."""
