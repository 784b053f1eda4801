"""Errors a user can cause (bad input), as opposed to bugs.

Every `UserError` message is one sentence a user can act on. The CLI prints it on
stderr and exits with code 2; the GUI shows it in an error dialog. Anything that is
not a `UserError` is a bug and keeps its traceback.
"""

from __future__ import annotations


class UserError(Exception):
    """Bad input: the message is one clear sentence, shown without a traceback."""


class TraceFormatError(UserError):
    """A trace on disk is missing, unreadable, malformed or from a newer format."""


class ConfigError(UserError):
    """A hardware preset, workload or capture option is invalid."""
