"""The CUDA-graphs subject: its view (``view``: rows, lines, chart, definitions, built once from the
analysis), its arrangements for ``inproc graphs`` (``formats``: Markdown, text, the HTML page) and
for the report's "CUDA graphs" section (``section``), and its JSON (``data``: every figure unrounded,
which no other format shows). Each arrangement places the view's pieces with the shared writers
(``inproc.render.writers``); none builds a row."""
