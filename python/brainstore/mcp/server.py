"""The brainstore MCP server: one Brain's memory as tools, each mapped onto one contract operation.

Invariants:
- Every tool calls the HTTP API through :class:`brainstore.client.Client`; nothing here touches the
  service or the store, so keys, scopes, rate limits and the Brain binding are enforced by /v1 exactly
  as for any other caller.
- A tool's result is the operation's contract JSON, unchanged (citations included), as JSON text and as
  ``structured_content``. A failure is a tool error (``is_error``) carrying the spec's Error body.
- The Brain is fixed per connection (stdio: ``--brain``; hosted: the key's bound Brain); no tool takes a
  brain id, so a model cannot reach another Brain.
- Arguments are typed strictly (a boolean is not an integer) and an argument that fails validation is
  a tool error carrying the Error body ``invalid_request_body`` with a ``<field>: <reason>`` message,
  like the API's own validation, never the validator's text.
"""

from __future__ import annotations

import json
import logging
import threading
from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager, contextmanager
from dataclasses import dataclass
from typing import Annotated, Any, Literal, Protocol

import anyio
import httpx
from mcp.server.mcpserver import Context, MCPServer
from mcp.server.mcpserver.exceptions import ToolError, UnexpectedToolError
from mcp.server.mcpserver.utilities.func_metadata import FuncMetadata
from mcp.shared.exceptions import MCPError
from mcp_types import INVALID_PARAMS, CallToolResult, TextContent, ToolAnnotations
from pydantic import Field, ValidationError

from brainstore.api.validation import IDEMPOTENCY_KEY_MAX, MAX_DEPTH, check_parsed_json
from brainstore.client import Client
from brainstore.errors import BrainstoreError, error, invalid
from brainstore.ids import new_id

INSTRUCTIONS = """\
brainstore is this user's long-term memory: one Brain holding Records (what was said or written) and \
Memories derived from them (cited, time-aware statements). Use `context` before answering anything that \
depends on what you were told earlier; use `remember` to keep something worth knowing later. Every \
Memory and every Context item cites the Record it came from (rec_... ids): quote those citations rather \
than inventing facts. A tool error carries the service's Error body: branch on its `code`."""

DOCS_BASE = "https://docs.brainstore.dev"

log = logging.getLogger("brainstore.mcp")


class Binding(Protocol):
    """How a tool call reaches the API: a Client for this call and the Brain it may touch."""

    def open(self, ctx: Context) -> AbstractContextManager[tuple[Client, str]]: ...


@dataclass
class FixedBinding:
    """One Client and one Brain for the whole connection (stdio).

    With ``create_brain`` the Brain is created on the first tool call if it does not exist yet, with
    ``self_name`` as its self (a person): a desktop agent pointed at an empty data directory just works.
    """

    client: Client
    brain: str
    create_brain: bool = True
    self_name: str | None = None

    def __post_init__(self) -> None:
        self._ready = not self.create_brain
        self._lock = threading.Lock()

    def _ensure_brain(self) -> None:
        with self._lock:
            if self._ready:
                return
            try:
                self.client.get_brain(self.brain)
            except BrainstoreError as exc:
                if exc.code != "brain_not_found":
                    raise
                try:
                    self.client.create_brain(
                        self.brain, self={"type": "person", "name": self.self_name or self.brain}
                    )
                except BrainstoreError as created:
                    if created.code != "brain_exists":  # a concurrent creator won: fine
                        raise
            self._ready = True

    @contextmanager
    def open(self, ctx: Context) -> Iterator[tuple[Client, str]]:
        self._ensure_brain()
        yield self.client, self.brain


def _error_body(exc: BrainstoreError) -> dict[str, Any]:
    if exc.body is not None:
        return dict(exc.body)  # the server's own Error body, request_id and docs_url included
    return {
        "type": exc.type,
        "code": exc.code,
        "message": exc.message,
        "request_id": new_id("trc"),
        "docs_url": f"{DOCS_BASE}/errors/{exc.code}",
        **exc.extra,
    }


def _json_result(body: dict[str, Any], *, is_error: bool = False) -> CallToolResult:
    text = json.dumps(body, ensure_ascii=False, indent=None)
    return CallToolResult(
        content=[TextContent(type="text", text=text)], structured_content=body, is_error=is_error
    )


def tool_error(body: dict[str, Any]) -> dict[str, Any]:
    """A tool error carrying ``body`` as the JSON-RPC ``result`` of a tools/call, for a transport."""
    return _json_result(body, is_error=True).model_dump(by_alias=True, exclude_none=True, mode="json")


def _run(binding: Binding, ctx: Context, call: Callable[[Client, str], dict[str, Any]]) -> CallToolResult:
    try:
        with binding.open(ctx) as (client, brain):
            return _json_result(call(client, brain))
    except BrainstoreError as exc:
        return _json_result(_error_body(exc), is_error=True)
    except httpx.InvalidURL:
        # an argument that goes into the path made it longer than a URL may be
        return _json_result(_error_body(invalid("arguments", "an id, type or key is too long")), is_error=True)
    except httpx.HTTPError as exc:
        # The API could not be reached at all: still the spec's one Error shape.
        unreachable = error(
            "internal_error", f"the brainstore API could not be reached: {type(exc).__name__}"
        )
        return _json_result(_error_body(unreachable), is_error=True)
    except Exception:
        log.exception("an MCP tool call failed")
        return _json_result(_error_body(error("internal_error", "the tool call failed")), is_error=True)


def _argument_error(exc: ValidationError) -> BrainstoreError:
    """The first failure as ``<argument>: <reason>``; union-branch names in the location are dropped."""
    first = exc.errors()[0]
    loc = first["loc"]
    field = str(loc[0]) + "".join(f"[{part}]" for part in loc[1:] if isinstance(part, int)) if loc else "arguments"
    if first["type"] == "missing":
        reason = "is required"
    elif first["type"] in ("int_type", "int_parsing", "int_from_float"):
        reason = "must be an integer (a boolean is refused)"
    else:
        message = str(first["msg"])
        reason = "must be" + message[len("Input should be") :] if message.startswith("Input should be") else message
    return invalid(field, reason)


def is_request_id(value: Any) -> bool:
    """A JSON-RPC request id MCP takes: a string or an integer (never null, a boolean or a float)."""
    return isinstance(value, str) or (isinstance(value, int) and not isinstance(value, bool))


#: Set by the hosted mount (and only by it: a client's own is dropped) on a message whose text it has
#: checked with the API's rule, so that the tool call's arguments need no other check.
ARGUMENTS_CHECKED_HEADER = "x-brainstore-arguments-checked"
#: A tools/call message's own levels above its arguments (the message, its params).
ARGUMENTS_LEVEL = 2
#: Deepest nesting a transport accepts in a whole message: the arguments are held to a /v1 body's
#: MAX_DEPTH by the tool call, so the message may add its own levels, and one more, so that a value one
#: level too deep reaches the tool call and is refused there, its member named as /v1 names it. At
#: MAX_DEPTH, an Object value /v1 accepts at 62-64 levels was refused by accept_object.
MESSAGE_DEPTH = MAX_DEPTH + ARGUMENTS_LEVEL + 1


def _checked_by_transport(context: Context | None) -> bool:
    try:
        headers = context.headers if context is not None else None
    except ValueError:  # a Context outside a request
        return False
    return headers is not None and headers.get(ARGUMENTS_CHECKED_HEADER) == "1"


class BrainstoreMCP(MCPServer):
    """MCPServer whose argument failures are the spec's Error body, like every other tool failure."""

    async def call_tool(
        self, name: str, arguments: dict[str, Any], context: Context | None = None
    ) -> Any:
        try:
            tool = self._tool_manager.get_tool(name)
            if tool is None:
                # the SDK's own answer was the plain text "Unknown tool: x", no Error body
                tools = ", ".join(known.name for known in self._tool_manager.list_tools())
                raise invalid("name", f"unknown tool; allowed: {tools}")
            # Strings reach the API's JSON and the store: the API's own rule (no lone surrogates,
            # bounded depth) applies before anything is sent. Not on the event loop all hosted keys
            # share, where a megabyte of empty lists walked held it over a second: not again when the
            # hosted mount has checked the message's text, else in a worker thread, walked only where
            # the text may refuse.
            if not _checked_by_transport(context):
                await anyio.to_thread.run_sync(check_parsed_json, arguments)
            # as the API refuses an unknown member: a misspelt visibility stored a shareable Record
            allowed = list(tool.parameters.get("properties", {}))
            for argument in arguments or {}:
                if argument not in allowed:
                    raise invalid(argument, f"unknown argument; allowed: {', '.join(allowed)}")
        except BrainstoreError as exc:
            return _json_result(_error_body(exc), is_error=True)
        try:
            return await super().call_tool(name, arguments, context)
        except ToolError as exc:
            if isinstance(exc, UnexpectedToolError) or not isinstance(exc.__cause__, ValidationError):
                raise
            return _json_result(_error_body(_argument_error(exc.__cause__)), is_error=True)

    async def get_prompt(
        self, name: str, arguments: dict[str, Any] | None = None, context: Context | None = None
    ) -> Any:
        if self._prompt_manager.get_prompt(name) is None:
            # The SDK raised a ValueError: any key could log an ERROR with its traceback at will, and
            # the answer was JSON-RPC code 0 (or -32603). An unknown resource is invalid params.
            raise MCPError(code=INVALID_PARAMS, message="Unknown prompt")
        return await super().get_prompt(name, arguments, context)


READ = ToolAnnotations(read_only_hint=True, open_world_hint=False)
WRITE = ToolAnnotations(read_only_hint=False, destructive_hint=False, open_world_hint=False)

#: Integers are strict: JSON true is not 1 (the API refuses a boolean if_version; so does the tool).
Integer = Annotated[int | None, Field(strict=True)]

Timestamp = Annotated[
    str | None,
    Field(description="RFC 3339 date-time with a time zone, e.g. 2024-05-01T12:00:00Z."),
]


IdempotencyKey = Annotated[
    str | None,
    Field(
        description="A new string for this write (1-255 printable ASCII characters). After a failure or a "
        "timeout, send the same arguments with the same key: the write is made once, and the reply is the "
        "first one's."
    ),
]


def _idempotency_key(value: str | None) -> str | None:
    """The Idempotency-Key header of a write: without it, a write retried after a timeout (which may
    still have completed) was made twice. Only what a header carries is sent: any other character
    failed in the HTTP client, an internal_error."""
    if value is not None and not (
        1 <= len(value) <= IDEMPOTENCY_KEY_MAX and value.isascii() and value.isprintable()
    ):
        raise invalid("idempotency_key", f"must be 1 to {IDEMPOTENCY_KEY_MAX} printable ASCII characters")
    return value


def build_server(binding: Binding, *, name: str = "brainstore") -> MCPServer:
    """An MCPServer whose tools act on ``binding``'s Brain through the HTTP API."""
    # WARNING: the SDK configures root logging at this level if nothing else has (INFO is per-call noise).
    # No subscriptions/listen: its answer is an endless notification stream, and there is nothing to
    # listen for (the tools never change). Served, one request held a hosted gunicorn thread for the
    # whole call_timeout.
    server = BrainstoreMCP(name, instructions=INSTRUCTIONS, log_level="WARNING", subscriptions=False)

    @server.tool(annotations=WRITE)
    def remember(
        ctx: Context,
        content: Annotated[
            str | dict[str, Any],
            Field(
                description=(
                    "What to remember. Plain text is stored as a document. Or a typed shape: "
                    '{"kind":"message","text":"...","role":"user|assistant|system|other","speaker":"Name"}, '
                    '{"kind":"fact","text":"..."} or {"kind":"fact","subject":"...","predicate":"...",'
                    '"value":"..."}, {"kind":"event","name":"...","text":"..."}, '
                    '{"kind":"document","text":"...","title":"..."}, or a correction '
                    '{"kind":"correction","corrects":"mem_...","text":"the right statement"}. '
                    "Something the user said about themselves: send it as a message with role user, so "
                    "it is attributed to them (plain text is a document with no speaker)."
                )
            ),
        ],
        occurred_at: Timestamp = None,
        visibility: Annotated[
            Literal["shareable", "redacted_summary", "local_only"] | None,
            Field(description="Default shareable. redacted_summary is only ever served summarized."),
        ] = None,
        source: Annotated[
            dict[str, Any] | None,
            Field(description='Where it came from, e.g. {"name": "chat", "trust": "high|normal|low"}.'),
        ] = None,
        idempotency_key: IdempotencyKey = None,
    ) -> CallToolResult:
        """Store a Record in this Brain's memory (rememberRecord).

        Use it for anything the user will expect you to know later: preferences, facts about people,
        decisions, events with their date. Memories are derived from the Record in the background, so
        the reply is the Record with status "processing"; it is durable already. To fix a wrong Memory,
        remember a correction naming its mem_ id instead of forgetting things.
        """
        return _run(
            binding,
            ctx,
            lambda c, b: c.remember_record(
                b,
                content,
                source=source,
                visibility=visibility,
                occurred_at=occurred_at,
                idempotency_key=_idempotency_key(idempotency_key),
            ),
        )

    @server.tool(annotations=READ)
    def context(
        ctx: Context,
        query: Annotated[str, Field(description="The question or task you need memory for, in words.")],
        budget_tokens: Annotated[
            Integer, Field(description="Most tokens the evidence may use (1-100000, default 2000).")
        ] = None,
        budget_ms: Annotated[
            Integer,
            Field(
                description="Most milliseconds the search may take (1-60000; default 250 for fast, 5000 "
                "for thorough). Lanes not run in time are named in budget.ms.cut_lanes."
            ),
        ] = None,
        include: Annotated[
            list[Literal["evidence", "memories", "objects", "profile"]] | None,
            Field(description="Components to return; default [evidence]."),
        ] = None,
        as_of: Timestamp = None,
        mode: Annotated[
            Literal["fast", "thorough"] | None,
            Field(
                description="fast (default) returns cited evidence only; thorough may also compose an answer."
            ),
        ] = None,
        purpose: Annotated[
            str | None, Field(description="A configured policy name; default general.")
        ] = None,
    ) -> CallToolResult:
        """Assemble budgeted, cited context from this Brain for a query (createContext).

        Call it before answering questions about the user, their people, plans or history. The
        evidence reads as a transcript, in the order it was said: each item is headed by its speaker,
        and by its day where the day changes. Every evidence item points at citations and every
        citation at the rec_ Record it quotes: ground your answer in those and say what is unknown
        rather than guessing. as_of asks what was true at that time.
        """
        knobs = {"tokens": budget_tokens, "ms": budget_ms}
        budget = {k: v for k, v in knobs.items() if v is not None} or None
        return _run(
            binding,
            ctx,
            lambda c, b: c.create_context(
                b,
                query,
                budget=budget,
                include=list(include) if include is not None else None,
                as_of=as_of,
                mode=mode,
                purpose=purpose,
            ),
        )

    @server.tool(annotations=READ)
    def get_memory(
        ctx: Context,
        memory_id: Annotated[str, Field(description="A Memory id, mem_...")],
    ) -> CallToolResult:
        """Read one Memory with its revisions and evidence (getMemory).

        memory_not_found right after remember means the Record is still processing: wait and retry.
        """
        return _run(binding, ctx, lambda c, b: c.get_memory(b, memory_id))

    @server.tool(annotations=READ)
    def list_memories(
        ctx: Context,
        subject: Annotated[str | None, Field(description="Only Memories about this subject.")] = None,
        owner: Annotated[str | None, Field(description="Only Memories owned by this person.")] = None,
        as_of: Timestamp = None,
        since_watermark: Annotated[
            str | None, Field(description="A page's watermark: return only what changed since (delta read).")
        ] = None,
        cursor: Annotated[str | None, Field(description="next_cursor of the previous page.")] = None,
        limit: Annotated[Integer, Field(description="Page size, 1-500 (default 50).")] = None,
    ) -> CallToolResult:
        """List this Brain's Memories, each with its citations (listMemories).

        Follow next_cursor while has_more is true. Prefer `context` to answer a question; use this to
        browse or audit what is remembered.
        """
        return _run(
            binding,
            ctx,
            lambda c, b: c.list_memories(
                b,
                subject=subject,
                owner=owner,
                as_of=as_of,
                since_watermark=since_watermark,
                cursor=cursor,
                limit=limit,
            ),
        )

    @server.tool(annotations=WRITE)
    def accept_object(
        ctx: Context,
        type: Annotated[str, Field(description="Object type, a slug such as 'preferences' or 'task'.")],
        key: Annotated[str, Field(description="Object key within the type, a slug.")],
        value: Annotated[Any, Field(description="The whole new value (any JSON); it replaces the old one.")],
        if_version: Annotated[
            Integer,
            Field(description="Write only if the current version is this one (0: only if absent)."),
        ] = None,
        idempotency_key: IdempotencyKey = None,
    ) -> CallToolResult:
        """Store a new version of a structured Object (acceptObject).

        Objects are exact, versioned state you maintain (settings, a task list), unlike Memories which
        are derived. Pass if_version from get_object to avoid overwriting a concurrent change: a
        stale_version error carries current_version; re-read, re-apply, retry once.
        """
        return _run(
            binding,
            ctx,
            lambda c, b: c.accept_object(
                b,
                type,
                key,
                value,
                idempotency_key=_idempotency_key(idempotency_key),
                **({"if_version": if_version} if if_version is not None else {}),
            ),
        )

    @server.tool(annotations=READ)
    def get_object(
        ctx: Context,
        type: Annotated[str, Field(description="Object type.")],
        key: Annotated[str, Field(description="Object key.")],
    ) -> CallToolResult:
        """Read the current value and version of a structured Object (getObject).

        object_not_found means nothing was stored at that type and key yet. Keep the version to pass
        as if_version to accept_object.
        """
        return _run(binding, ctx, lambda c, b: c.get_object(b, type, key))

    @server.tool(
        annotations=ToolAnnotations(read_only_hint=False, destructive_hint=True, open_world_hint=False)
    )
    def forget_record(
        ctx: Context,
        record_id: Annotated[str, Field(description="The Record id to erase, rec_...")],
    ) -> CallToolResult:
        """Permanently erase a Record and what was derived only from it (forgetRecord).

        Only when the user asks to forget something. It cannot be undone. Records imported from an
        external source answer record_not_erasable: they must be erased at their source.
        """
        return _run(binding, ctx, lambda c, b: c.forget_record(b, record_id))

    @server.tool(annotations=READ)
    def get_profile(
        ctx: Context,
        limit: Annotated[Integer, Field(description="Most lines to return, 1-100 (default 20).")] = None,
    ) -> CallToolResult:
        """Read the Brain owner's profile: current, cited statements about them (getProfile).

        A good first call in a new conversation to know who you are talking to.
        """
        return _run(binding, ctx, lambda c, b: c.get_profile(b, limit=limit))

    for tool in server._tool_manager.list_tools():
        tool.fn_metadata = _ArgumentsAsSent(
            arg_model=tool.fn_metadata.arg_model,
            output_schema=tool.fn_metadata.output_schema,
            output_model=tool.fn_metadata.output_model,
            wrap_output=tool.fn_metadata.wrap_output,
        )
    return server


class _ArgumentsAsSent(FuncMetadata):
    """A tool's arguments validated as the client sent them. The SDK reads a string given for an
    argument that may be something else as JSON first (for clients that send lists as JSON text):
    the text '{"kind": "correction", ...}' remembered as a document became a correction, '[1, 2]'
    accepted as an Object's value a list, and a subject filter of 'null' no filter."""

    def pre_parse_json(self, data: dict[str, Any]) -> dict[str, Any]:
        return data
