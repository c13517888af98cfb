"""The history subject: its view (``view``: the verdict, the changes, the notes, the spread learned, a trend chart
per metric and the nights, built once from a history, in the sentences of ``lines``), its arrangements as text
and Markdown (``formats``) and as the HTML trend page (``page``). Each arrangement places the view's pieces with
the shared writers (``inproc.render.writers``); none builds a row."""
