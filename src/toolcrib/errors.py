"""toolcrib's errors: one base, two families.

::

    ToolcribError
    ├── ModelFacingError          the model caused it and may fix it: becomes a controlled,
    │   │                         stable-shaped tool result {"ok": false, "error": {code, message}}
    │   ├── UnknownTool           not in the registry
    │   ├── NotOffered            registered, but not offered to this principal at this point of the run
    │   ├── InvalidArguments      JSON that does not parse, or fails the strict schema / domain checks
    │   ├── UngroundedArgument    an identifier that appears nowhere in the conversation
    │   ├── NotPermitted          the policy denied this principal this call
    │   │   └── UntrustedSource   a sensitive argument or an egress destination found only in content
    │   │                         others wrote (or nowhere): refused before any person is asked
    │   ├── ApprovalRequired      a WRITE/ACTUATE call is held until a person approves it
    │   ├── ToolFailed            the tool raised; the message carries no internals
    │   │   └── ToolUnavailable   a remote tool (an MCP server's) is down, disabled or answered garbage
    │   ├── ToolTimeout           the tool ran past its time bound (for writes: outcome unknown)
    │   └── CallDropped           a call the run's mode does not allow (e.g. a second call in single mode)
    └── OperatorError             the developer or operator caused it: raised, with what to do
        ├── ConfigError           a broken workspace or setting: names the file, key and expectation
        ├── MissingDependency     an optional backend whose extra is not installed
        ├── ModelUnavailable      a model backend that cannot be reached or loaded
        ├── LimitExceeded         a run limit (rounds, calls, tokens, wall time) was reached
        ├── TraceFormatError      a trace record of an unknown schema version or event kind
        └── StoreUnavailable      a store's database or disk cannot be reached or written now
                                  (PostgreSQL down or restarting, a full disk): try again later
"""

from __future__ import annotations

from typing import Any


class ToolcribError(Exception):
    """Base of every error toolcrib raises on purpose."""


class ModelFacingError(ToolcribError):
    """An error the model caused; it is shown to the model as a controlled tool result. A subclass
    declares its stable ``code`` as a class keyword: ``class UnknownTool(ModelFacingError, code="unknown_tool")``."""

    code: str = "tool_error"

    def __init_subclass__(cls, *, code: str | None = None, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        if code is not None:
            cls.code = code

    def __init__(self, message: str, *, code: str | None = None) -> None:
        super().__init__(message)
        self.message = message
        if code is not None:
            self.code = code

    def to_result(self) -> dict[str, Any]:
        """The one stable error shape the model and the user see."""
        return {"ok": False, "error": {"code": self.code, "message": self.message}}


class UnknownTool(ModelFacingError, code="unknown_tool"):
    """Not in the registry."""


class NotOffered(ModelFacingError, code="not_offered"):
    """Registered, but not offered to this principal at this point of the run."""


class InvalidArguments(ModelFacingError, code="invalid_arguments"):
    """JSON that does not parse, or fails the strict schema or the tool's domain checks."""


class UngroundedArgument(ModelFacingError, code="ungrounded_argument"):
    """An identifier that appears nowhere in the conversation."""


class NotPermitted(ModelFacingError, code="not_permitted"):
    """The policy denied this principal this call."""


class UntrustedSource(NotPermitted, code="untrusted_argument"):
    """A sensitive argument or an egress destination found only in content others wrote (or nowhere):
    refused before any person is asked."""


class ApprovalRequired(ModelFacingError, code="approval_required"):
    """A WRITE/ACTUATE call is held until a person approves it."""


class ToolFailed(ModelFacingError, code="tool_failed"):
    """The tool raised; the message carries no internals (``internal`` does, for the operator's trace)."""

    def __init__(self, message: str, *, code: str | None = None, internal: str = "") -> None:
        super().__init__(message, code=code)
        self.internal = internal  # what the tool raised: for the operator's trace, never for the model


class ToolUnavailable(ToolFailed, code="tool_unavailable"):
    """A remote tool that cannot be used now: its server is down or slow, answered something that is
    not a result, or the tool is disabled until an operator trusts its changed definition."""


class ToolTimeout(ModelFacingError, code="timeout"):
    """The tool ran past its time bound (for a write: its outcome is unknown)."""


class CallDropped(ModelFacingError, code="dropped"):
    """A call the run's mode does not allow (a second call in single mode)."""


class OperatorError(ToolcribError):
    """An error the developer or operator must fix; the message says what to do."""


class ConfigError(OperatorError):
    """A broken configuration value, reported with where it is and what is expected."""

    def __init__(self, message: str, *, file: str | None = None, key: str | None = None) -> None:
        where = ", ".join(part for part in (file, f"key '{key}'" if key else None) if part)
        super().__init__(f"{where}: {message}" if where else message)
        self.message = message
        self.file = file
        self.key = key


class MissingDependency(OperatorError):
    """An optional backend is not installed; the message names the extra."""

    def __init__(self, what: str, extra: str) -> None:
        super().__init__(f"{what} needs an optional dependency: pip install 'toolcrib[{extra}]'")
        self.extra = extra


class ModelUnavailable(OperatorError):
    """A model backend could not be reached, authenticated or loaded."""


class LimitExceeded(OperatorError):
    """A run limit was reached."""


class TraceFormatError(OperatorError):
    """A trace record that is not an event of a schema version this toolcrib reads."""


class StoreUnavailable(OperatorError):
    """A store (approvals, audit, runs, keys) cannot be reached or written now: its PostgreSQL server is
    down or restarting, or its disk is full. Nothing was recorded by the step that raised it; the service
    answers 503 with ``Retry-After``, and the same request succeeds once the store is back."""

    code = "unavailable"
    retry_after = 2  # seconds: a restarting PostgreSQL is usually back within this

    def __init__(self, message: str, *, what: str = "") -> None:
        super().__init__(message)
        self.message = message
        self.what = what
