"""User-facing errors: one line, the bad value, the valid choices; the CLI exits 2."""


class UsageError(Exception):
    """Bad input from the user (profile, flag, file). Printed as one line, exit code 2."""
