"""A stand-in that refuses to be imported: first on the path of the children of a test marked ``engine_free``
(``tests/spawn.py``), whose commands must run as on an install without engines."""
raise ModuleNotFoundError("No module named 'sglang' (a child of a test marked engine_free imported it)", name="sglang")
