"""The error family: every error a user's mistake or a refused request raises.

Theory of operation. Each class carries `.message` (one sentence: what went wrong, naming the
file, role, step or thread) and `.hint` (what to do about it; may be empty), a stable `.code`
(the kind: `graph`, `inputs`, `refused`, `store`, `provider`, `workspace`, `session`,
`reply`) and `.usage_error` (True when the request itself is wrong: the command line exits 2, else
1). The faces (command line, web page, MCP server) never read these apart: `wording.word`
turns any exception into the one text they all show.

The category classes are defined here, below every other package, so that `definition/`,
`core/` and `store/` can raise them; the classes of a module's own failures (a worktree's git
error, an actor's) subclass them where they are defined. Old import paths keep working: each
class defined here is re-exported by the module that used to define it.

Pickling keeps every attribute whatever a subclass's constructor takes (`__reduce__`), so an
error crosses a process boundary (multiprocessing, a Temporal activity's payload) unchanged.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, ClassVar

if TYPE_CHECKING:
    from ..definition.problems import Problem


def _restore(cls: type[BaseException], args: tuple[Any, ...], state: dict[str, Any]) -> Any:
    """Rebuild an error without calling its constructor: its args and attributes as they were."""
    error = cls.__new__(cls, *args)
    error.args = args
    error.__dict__.update(state)
    return error


class OrchestratorError(Exception):
    """An error orchestrator raises for a user's mistake or a refused request; nothing was
    changed unless the subclass says otherwise. `.message` says what, `.hint` what to do."""

    code: ClassVar[str] = "error"
    # The request itself is wrong (the command line exits 2), not the world it met (exit 1).
    usage_error: bool = False

    def __init__(self, message: str, *, hint: str = "", usage_error: bool | None = None):
        super().__init__(message)
        self.message = message
        self.hint = hint
        if usage_error is not None:
            self.usage_error = usage_error

    @property
    def details(self) -> tuple[str, ...]:
        """Lines that go with the message: the problems of a graph, why an answer was refused."""
        return ()

    def __reduce__(self) -> tuple[Any, ...]:
        return (_restore, (type(self), self.args, dict(self.__dict__)))


class GraphError(OrchestratorError):
    """A graph could not be loaded, or has errors; `.problems` says why, each with file, line
    and column (docs/problems.md lists the codes). `str()` is the first problem (and how many
    more), as it always was; `.message` says the graph has problems, `.details` lists them."""

    code = "graph"
    usage_error = True

    def __init__(self, problems: Sequence[Problem], message: str = "", *, hint: str = ""):
        self.problems = list(problems)
        first = self.problems[0].format() if self.problems else "graph could not be loaded"
        more = f" (and {len(self.problems) - 1} more)" if len(self.problems) > 1 else ""
        super().__init__(message or "the graph has problems", hint=hint)
        self.args = (first + more,)

    @property
    def details(self) -> tuple[str, ...]:
        return tuple(p.format() for p in self.problems)


class InputError(OrchestratorError, ValueError):
    """The thread's inputs do not satisfy the graph's `inputs` schema, or an input (a file, a
    batch line, a recording) cannot be read."""

    code = "inputs"
    usage_error = True


class Refused(OrchestratorError):
    """The request is not allowed in this state; nothing is recorded.

    `errors` lists what was wrong with a person's answer; empty when the thread's state is the
    reason (the message says what to do instead).
    """

    code = "refused"

    def __init__(self, message: str, errors: tuple[str, ...] = (), *, hint: str = ""):
        # An answer with errors is a problem found (exit 1); a request the state refuses is
        # a usage error (exit 2), as the command line always said.
        super().__init__(message, hint=hint, usage_error=not errors)
        self.errors = tuple(errors)

    @property
    def details(self) -> tuple[str, ...]:
        return tuple(f"- {e}" for e in self.errors)


class SessionError(OrchestratorError):
    """A request the session cannot carry out (no credentials, a workspace that is not a
    folder, a graph with errors, a Temporal server out of reach); nothing was changed.

    `usage` is True when the request itself is wrong (exit 2), False when the graph, the
    workspace or the repository is (exit 1). `problems` are lint problems to show.
    """

    code = "session"

    def __init__(
        self,
        message: str,
        *,
        usage: bool = True,
        problems: Sequence[Problem] | None = None,
        hint: str = "",
    ):
        super().__init__(message, hint=hint, usage_error=usage)
        self.usage = usage
        self.problems = list(problems or [])

    @property
    def details(self) -> tuple[str, ...]:
        return tuple(p.format() for p in self.problems)


class StoreError(OrchestratorError):
    """The store cannot be read or written: a full disk, a damaged file, a read-only folder.

    The message names the store's file and what to do. `kind` says which: `full`, `damaged`,
    `unwritable`, `busy`, `io`, `missing` (no such thread) or `other`. Whatever was saved
    before the error is kept: an event is saved by a transaction, which either happens whole
    or not at all.
    """

    code = "store"

    def __init__(self, message: str, kind: str = "other", *, hint: str = ""):
        super().__init__(message, hint=hint)
        self.kind = kind


class ThreadBusy(StoreError):
    """Another process is advancing this thread (or just appended to it)."""

    def __init__(self, message: str = "", *, hint: str = ""):
        super().__init__(
            message or "another process is advancing this thread",
            "busy",
            hint=hint or "wait for it to stop, or cancel the thread from any process",
        )


class ThreadNotFound(StoreError, SessionError):
    """No thread has this id (nor a unique prefix or suffix of it). Also a `SessionError`,
    which is what the session raised for an unknown id before the family existed."""

    usage_error = True

    def __init__(self, thread_id: str, message: str = "", *, hint: str = ""):
        OrchestratorError.__init__(
            self,
            message or f"no thread '{thread_id}'",
            hint=hint or "see `orchestrator threads list`",
        )
        self.kind = "missing"
        self.usage = True
        self.problems = []
        self.thread_id = thread_id


class ProviderError(OrchestratorError):
    """A model provider, or another actor, could not produce a reply (down, rate-limited, a
    key refused, a models file that cannot be read). A running thread does not raise it: it
    suspends with the message, to be resumed; it reaches a caller that calls an actor itself."""

    code = "provider"


class WorkspaceError(OrchestratorError):
    """The thread's workspace cannot be used: a git worktree that cannot be made or was
    tampered with, no sandbox for a role that needs one."""

    code = "workspace"
