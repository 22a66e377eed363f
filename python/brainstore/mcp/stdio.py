"""Local MCP over stdio: ``brainstore mcp --project P --brain B``.

Two ways to reach the API, both through :class:`brainstore.client.Client`:

- ``--url URL --key KEY``: a running brainstore server, with that key.
- no ``--url`` (embedded): the service is built in this process on ``--data-dir`` and the Client talks to
  it through ``httpx.WSGITransport``, with the local key ``sk_test_<project>_local`` (no key registry).
  Embedded mode is for when NO server runs on that data directory: a DuckDB file admits one process,
  so if a server holds it the open fails and we refuse with a clear message instead of waiting.

stdout is the protocol channel: nothing else may be printed there.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from brainstore.errors import BrainstoreError, error
from brainstore.ids import new_id

EMBEDDED_BASE_URL = "http://embedded/v1"


def local_key(project: str) -> str:
    return f"sk_test_{project}_local"


@dataclass(frozen=True)
class StdioSettings:
    project: str | None
    brain: str | None
    url: str | None = None
    key: str | None = None
    engine: str = "duckdb"
    data_dir: Path = Path("brainstore-data")
    self_name: str | None = None
    docs_base: str = "https://docs.brainstore.dev"


def refusal(exc: BrainstoreError, docs_base: str) -> dict[str, Any]:
    """The spec's Error body for a refusal that happens before any request is made."""
    return {
        "type": exc.type,
        "code": exc.code,
        "message": exc.message,
        "request_id": new_id("trc"),
        "docs_url": f"{docs_base}/errors/{exc.code}",
    }


def check_identity(settings: StdioSettings) -> None:
    """Rule 7: local stdio MCP needs an explicit project and an explicit Brain, else 401."""
    missing = [
        hint
        for value, hint in (
            (settings.project, "--project (or BRAINSTORE_MCP_PROJECT)"),
            (settings.brain, "--brain (or BRAINSTORE_MCP_BRAIN)"),
        )
        if not value
    ]
    if missing:
        raise error(
            "mcp_identity_unconfigured",
            f"local MCP needs an explicit project and Brain; set {' and '.join(missing)}",
        )
    assert settings.project is not None
    if "_" in settings.project:
        raise error(
            "mcp_identity_unconfigured",
            "project: must not contain '_' (keys are sk_<env>_<project>_<secret>)",
        )
    if settings.url:
        if not settings.key:
            raise error("invalid_api_key", "Authorization: --url needs --key (or BRAINSTORE_API_KEY)")
        from brainstore.auth.keys import parse_key

        key = parse_key(settings.key)
        if key.project != settings.project:
            raise error(
                "mcp_identity_unconfigured",
                f"project: --project {settings.project!r} does not match the key's project {key.project!r}",
            )


class DataDirectoryBusy(RuntimeError):
    """Embedded mode cannot open the data directory: a running server holds it."""


# Builds the embedded engine (the composition root lends it: brainstore.app.stdio_engine):
# (settings, base_url, key) -> the Client on it and a callable that stops it.
Embedded = Callable[[StdioSettings, str, str], tuple[Any, Callable[[], None]]]


def run(settings: StdioSettings, *, embedded: Embedded | None = None) -> int:
    """Serve MCP on stdin/stdout until the client closes it. Returns the process exit code."""
    try:
        check_identity(settings)
    except BrainstoreError as exc:
        print(json.dumps(refusal(exc, settings.docs_base)), file=sys.stderr)
        return 2
    assert settings.project is not None and settings.brain is not None

    import logging

    # Request lines from the client library would be noise on the agent's stderr log.
    logging.getLogger("httpx").setLevel(logging.WARNING)

    from brainstore.client import Client
    from brainstore.mcp.server import FixedBinding, build_server

    stop: Callable[[], None] = lambda: None  # noqa: E731
    if settings.url:
        client = Client(settings.url, settings.key or "")
    else:
        if embedded is None:
            raise ValueError("embedded mode needs the engine factory (brainstore.app.stdio_engine)")
        try:
            client, stop = embedded(settings, EMBEDDED_BASE_URL, local_key(settings.project))
        except DataDirectoryBusy:
            print(
                f"brainstore mcp: {settings.data_dir}/brainstore.duckdb is in use (is `brainstore serve` "
                "running on it?). Embedded mode is only for when no server runs: pass --url and --key to "
                "talk to the running server instead.",
                file=sys.stderr,
            )
            return 2
    binding = FixedBinding(client, settings.brain, create_brain=True, self_name=settings.self_name)
    try:
        build_server(binding).run("stdio")
    finally:
        client.close()
        stop()
    return 0
