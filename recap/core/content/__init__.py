"""A message's content made ready to store (pure): content arrays validated
against the SDK's request types (``blocks``), inline images and documents
measured (``media``), blocks rendered as text (``render``), and the stored
message they make (``message``)."""
