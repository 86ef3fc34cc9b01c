"""The retention guard (pure): nothing is deleted until its specifics are kept.

What a fold must keep and how it is settled (``guard``), which specifics the
conversation showed it needs (``salience``), the ``specific: context`` entries and
the ranked lines they become (``entries``, ``kept``), the summary's details section
(``details``) and the repair call (``repairs``)."""
