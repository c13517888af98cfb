"""Measuring: the session (``session``: engine, plan, warm-up, record header), the loop over
the plan (``runner``), one entry (``cell``), the engine between measurements (``driver``),
one decode cell's loop (``decode``), progress (``progress``) and Ctrl-C (``interrupt``)."""
