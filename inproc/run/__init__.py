"""Measuring: the session (``session``: engine, plan, warm-up, record header), the loop over
the plan (``runner``), one entry (``cell``), the stepping itself (``driver``), progress
(``progress``) and Ctrl-C (``interrupt``)."""
