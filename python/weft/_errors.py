"""Weft's exceptions, and the one place that maps Flight errors onto them."""

from __future__ import annotations

import re
from typing import NoReturn

import pyarrow as pa
import pyarrow.flight as fl


class WeftError(Exception):
    """Base class of every error the weft client raises."""


class InvalidArgument(WeftError, ValueError):
    """The request was malformed: a bad name, recipe, weight, world size,
    column or step. The message names the field at fault and the fix."""


class NotFound(WeftError, LookupError):
    """A project, branch, ref, commit, table or run does not exist."""

    def __str__(self) -> str:  # LookupError would quote the message like KeyError does not, keep it plain
        return str(self.args[0]) if self.args else ""


class AlreadyExists(WeftError):
    """Creating a project or branch that exists."""


class Aborted(WeftError):
    """A commit kept losing the race for its branch; retry the append."""


class Unauthenticated(WeftError, PermissionError):
    """The server wants a token and got none, or one it does not accept
    (malformed, unknown or revoked): pass ``Client(uri, token=…)`` or set
    ``$WEFT_TOKEN`` to a token from ``flightd admin token create``."""


class PermissionDenied(WeftError, PermissionError):
    """The token is valid but lacks the scope the call needs in a project
    (read, write or admin); the message names both. Ask an admin for a
    token with that scope."""


class Unavailable(WeftError, ConnectionError):
    """The server cannot be reached (not running, wrong address, or it went
    away mid-call)."""


class ServerError(WeftError):
    """A fault inside the server; its log has the cause under the error id
    the message names."""


class TransformError(WeftError):
    """``transform_fn`` raised; the message carries the traceback from the
    process that ran it."""


_FLIGHT = re.compile(r"Flight returned ([a-z ]+?) error, with message: (.*)", re.S)

_BY_CODE = {
    "invalid argument": InvalidArgument,
    "not found": NotFound,
    "already exists": AlreadyExists,
    "aborted": Aborted,
    "unavailable": Unavailable,
    "unauthenticated": Unauthenticated,
    "permission denied": PermissionDenied,
    "unauthorized": PermissionDenied,
    "internal": ServerError,
}


def server_message(err: BaseException) -> tuple[str, str]:
    """(code, message) of a Flight error: the gRPC code in words and the
    server's own message, without pyarrow's prefix and detail suffix."""
    text = str(err)
    m = _FLIGHT.search(text)
    if not m:
        return "", text
    msg = m.group(2)
    # pyarrow appends ". Detail: …" (the C++ status detail) to some messages.
    msg = re.sub(r"\. (gRPC client debug context|Client context|Detail): .*\Z", "", msg, flags=re.S)
    return m.group(1), msg.strip()


def translate(err: BaseException, uri: str, what: str) -> WeftError:
    """The weft exception for a pyarrow/Flight error raised by call ``what``
    against the server at ``uri``."""
    code, msg = server_message(err)
    if isinstance(err, fl.FlightUnavailableError) or code == "unavailable":
        return Unavailable(f"{what}: cannot reach the Weft server at {uri} ({msg}); "
                           f"is `flightd serve` running there, and is the address right?")
    if isinstance(err, fl.FlightTimedOutError):
        return Unavailable(f"{what}: the Weft server at {uri} did not answer in time ({msg})")
    if isinstance(err, fl.FlightCancelledError):
        return WeftError(f"{what}: cancelled ({msg})")
    cls = _BY_CODE.get(code)
    if isinstance(err, fl.FlightUnauthenticatedError):
        cls = Unauthenticated
    elif isinstance(err, fl.FlightUnauthorizedError):
        cls = PermissionDenied
    if cls is None:
        if isinstance(err, pa.ArrowInvalid):
            cls = InvalidArgument
        elif isinstance(err, pa.ArrowKeyError):
            cls = NotFound
        else:
            cls = ServerError
    return cls(msg)


def reraise(err: BaseException, uri: str, what: str) -> NoReturn:
    raise translate(err, uri, what) from err


# What pyarrow raises for a failed Flight call.
FLIGHT_ERRORS = (pa.ArrowException, fl.FlightError)
