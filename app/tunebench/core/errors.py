"""Environment errors: things the user can fix, reported as one clear line, never a traceback.

Anything else that goes wrong is a bug and is allowed to surface with its traceback.
"""


class TunebenchError(Exception):
    """An error caused by the environment or the user's input, with a message fit for the user."""

    exit_code = 2
    kind = "environment"  # what failed, as data (the run's RunError carries it across the process boundary)


class ConfigError(TunebenchError):
    """Invalid command-line value, option, or file content."""

    kind = "config"


class WorkloadError(TunebenchError):
    """Unknown or malformed workload."""

    kind = "workload"


class TargetError(TunebenchError):
    """The target server cannot be reached, refuses us, or is in an unexpected state. `errno`: the server's or
    client library's error number, when there was one."""

    kind = "target"

    def __init__(self, message: str, errno: int | None = None):
        super().__init__(message)
        self.errno = errno


class SandboxError(TunebenchError):
    """The embedded sandbox server cannot be initialised, started or stopped."""

    kind = "sandbox"


class StoreError(TunebenchError):
    """The session store file is unusable (corrupt, locked, from a newer version)."""

    kind = "store"


class EngineError(TunebenchError):
    """The load engine cannot run (missing binary, failed start)."""

    kind = "engine"
