"""The one tree of Stalwart's errors: catch `StalwartError` for all of them, or a branch for one kind of trouble.

Each branch says whose move it is, and the `stalwart` command's exit status follows it (docs/errors.md):

- `UsageError`: the caller asked for something that cannot be done as asked (a command line, an agent file, a run
  input, a history file, a visibility query): fix the request and ask again. Nothing was started or changed.
- `NotFound`: the run, session or stored payload named is not there: check the id (`stalwart runs` lists them).
- `RunFailed`: the run was reached and ended without the answer asked for, or refused what was sent to it.
- `InfrastructureError`: what Stalwart runs on cannot serve: Temporal unreachable, a setting of this process
  unusable, storage, a model provider or a remote agent failing.

A class that is also a builtin error keeps that base beside its branch (`AgentFileError` is a `ValueError`), so
code that catches it by the builtin catches it still. Contracts import no other layer, so every layer
can derive from these.
"""

from __future__ import annotations


class StalwartError(Exception):
    """Every error Stalwart raises to its users; its message says what happened and what to do next."""


class UsageError(StalwartError):
    """The request cannot be done as asked (a command line, an agent file, a run input): fix it and ask again."""


class NotFound(StalwartError, LookupError):
    """What the request names (a run, a session, a stored payload) is not there: check the id or the place."""


class RunFailed(StalwartError):
    """The run was reached, and ended without the answer asked for or refused what was sent to it."""


class InfrastructureError(StalwartError):
    """What Stalwart runs on cannot serve: the Temporal server, storage, a model provider, a remote agent."""


class ConfigurationError(InfrastructureError, ValueError):
    """A setting of this process (a `STALWART_`, `OTEL_` or `TEMPORAL_` variable, a key file) cannot be used."""


class EncryptionKeyError(ConfigurationError):
    """The configured keys cannot be used, or a payload was sealed with a key that is not configured (or cannot be
    opened with it). Defined here, not beside the codec, so the converter (contracts/undecodable.py) raises it too."""


class MissingEncryptionKey(ConfigurationError, KeyError):
    """A payload is encrypted and this process has no encryption key to open it.

    Still a `KeyError`, as the SDK's converter raised for an encoding it does not know."""

    def __str__(self) -> str:
        # KeyError's own str() is the repr of its argument; this one is a sentence.
        return str(self.args[0]) if self.args else ""


class UnusablePath(UsageError, OSError):
    """A file or folder the request names cannot be read, made or written (a file where a folder must be, no
    permission): choose another path. Still an `OSError`."""

    @classmethod
    def of(cls, err: OSError) -> UnusablePath:
        """The error `err` said of its path, in the words a person reads: `PATH: REASON`."""
        return cls(f"{err.filename}: {err.strerror or err}" if err.filename is not None else str(err))
