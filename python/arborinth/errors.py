"""Exceptions carrying libarborinth's message."""


class ArborinthError(Exception):
    """A failure of the library: the message is the library's one line; errno its code."""

    def __init__(self, message, errno=None):
        super().__init__(message)
        self.errno = errno


class ArborinthInputError(ArborinthError, ValueError):
    """The input was at fault: a bad workspace name, mount spec, limit, file, or one that is
    taken or unknown (the command line's usage errors)."""
