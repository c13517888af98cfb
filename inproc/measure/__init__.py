"""From raw records to verdicts: the records (``trace``), each figure defined once
(``metrics``), the figures of an entry (``figures``), the loop detector (``loops``) and the
statuses (``judge``). Plain Python and numpy: no engine, no I/O."""
