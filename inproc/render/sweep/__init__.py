"""The sweep subject: its view (``view``: the headline, the variants, the failures, per decode cell its table,
chart and best variant, the definitions, built once from a sweep's summary; ``breakeven``: where speculation
pays; the ``--graph-sizes`` lists are the graphs subject's ``sweep_lists``), its arrangements as Markdown
(``formats``) and as the HTML page (``page``), and its figures unrounded (``data``: the report's CSV,
``break-even.json`` and ``break-even.csv``). Each arrangement places the view's pieces with the shared writers
(``inproc.render.writers``); none builds a row."""
