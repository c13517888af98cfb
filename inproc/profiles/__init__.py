"""Launch profiles: the schema and loader (``spec``), TOML writing (``toml_io``), launch
commands turned into profiles (``importer``), checks against the engine (``check``), what
the engine receives (``resolve``), and credentials kept out (``redact``)."""
