"""The package's own exceptions: each message names the bad value, where it came from, and the fix."""


class WikisimError(Exception):
    """Base of every error wikisim raises on purpose."""


class CorpusError(WikisimError):
    """An input file is unreadable, of an unknown format, truncated or malformed."""


class IndexNotBuiltError(WikisimError):
    """An index directory is missing, half-built or lacks the backend asked for."""


class ConfigError(WikisimError, ValueError):
    """A configuration value or argument is out of range or of the wrong kind."""


class ToolCallError(WikisimError):
    """A tool call is malformed; the env turns it into an observation, never a crash."""


class TaskError(WikisimError):
    """A task file or task record is malformed."""


class BackendError(WikisimError):
    """A backend (local index, remote server, web API) failed to answer."""
