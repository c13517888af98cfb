"""The results file: typed record (``schema``), entries derived from raw records
(``derive``), the one array codec (``codec``), and atomic writing and versioned loading
(``io``). Imports no engine."""
