"""The results file: typed record (``schema``), read in three stages (``load``: ``files``,
``document``, ``fromjson``) and written apart (``write``); its public names are ``io``.
Imports no engine."""
