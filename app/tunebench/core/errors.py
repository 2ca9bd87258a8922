"""Environment errors: things the user can fix, reported as one clear line, never a traceback.

Anything else that goes wrong is a bug and is allowed to surface with its traceback.
"""


class TunebenchError(Exception):
    """An error caused by the environment or the user's input, with a message fit for the user."""

    exit_code = 2


class ConfigError(TunebenchError):
    """Invalid command-line value, option, or file content."""


class WorkloadError(TunebenchError):
    """Unknown or malformed workload."""


class TargetError(TunebenchError):
    """The target server cannot be reached, refuses us, or is in an unexpected state."""


class SandboxError(TunebenchError):
    """The embedded sandbox server cannot be initialised, started or stopped."""


class StoreError(TunebenchError):
    """The session store file is unusable (corrupt, locked, from a newer version)."""


class EngineError(TunebenchError):
    """The load engine cannot run (missing binary, failed start)."""
