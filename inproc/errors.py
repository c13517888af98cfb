"""User-facing errors: one line, the bad value, the valid choices; the CLI exits 2."""


class UsageError(Exception):
    """Bad input from the user (profile, flag, file). Printed as one line, exit code 2."""


class EngineFailed(UsageError):
    """The engine raised while it was built, warmed up or stepped before anything was measured: one line with the
    engine's own message (``inproc.run.failure``), exit code 2, no results file."""
