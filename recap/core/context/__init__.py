"""The context of the chat app's next Claude call (pure): the summary, memories and
window assembled (``assemble``), stored turns replayed as valid Messages API turns
(``replay``), the request sent (``request``) and recall from the archive at reply
time (``lookback``)."""
