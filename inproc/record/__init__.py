"""The results file: typed record (``schema``), entries derived from raw records
(``derive``), and atomic writing and versioned loading
(``io``). Imports no engine."""
