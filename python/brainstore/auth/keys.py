"""API keys: ``sk_<env>_<project>_<secret>``, four non-empty underscore-separated segments."""

from __future__ import annotations

import hashlib
import secrets
from dataclasses import dataclass
from functools import cached_property

from brainstore.errors import BrainstoreError, error

ENVIRONMENTS = ("test", "live")
ALL_SCOPES = frozenset(
    {"records:write", "records:read", "memories:read", "objects:write", "objects:read", "context:read"}
)


@dataclass(frozen=True)
class ParsedKey:
    env: str
    project: str
    secret: str
    raw: str

    @property
    def prefix(self) -> str:
        return f"sk_{self.env}_{self.project}"

    @property
    def last4(self) -> str:
        return self.raw[-4:]

    @cached_property
    def sha256(self) -> str:
        """Held once read: a request reads it for its key's id, its rate limit and the registry."""
        return hashlib.sha256(self.raw.encode()).hexdigest()

    @property
    def id(self) -> str:
        """``key_<sha256[:12]>``: the registry's id of this key, derivable without a registry.

        This is what the API shows of a key (an Object's accepted_by): it reveals nothing of the
        secret, unlike its last characters.
        """
        return key_id(self.sha256)


def key_id(sha256: str) -> str:
    return f"key_{sha256[:12]}"


def parse_authorization(header: str | None) -> ParsedKey:
    if not header:
        raise error("invalid_api_key", "Authorization: header is missing; send Authorization: Bearer <API_KEY>")
    scheme, _, credential = header.strip().partition(" ")
    if scheme.lower() != "bearer" or not credential.strip():
        raise error("invalid_api_key", "Authorization: expected a Bearer credential")
    return parse_key(credential.strip())


def parse_key(raw: str) -> ParsedKey:
    parts = raw.split("_")
    if len(parts) != 4 or parts[0] != "sk" or not all(parts) or parts[1] not in ENVIRONMENTS:
        raise error("invalid_api_key", "Authorization: the key is not of the form sk_<test|live>_<project>_<secret>")
    return ParsedKey(env=parts[1], project=parts[2], secret=parts[3], raw=raw)


#: What a project must be for a key to name it (the rule of :func:`named_project`).
PROJECT_RULE = (
    "must be non-empty printable ASCII with no underscore and no space (a key is sk_<env>_<project>_<secret>, "
    "sent in an HTTP header)"
)


def named_project(project: str) -> bool:
    """Whether a key can name ``project``: whether a key made with it is one every caller can send and
    :func:`parse_key` reads it back. The one rule for a project: of ``keys create`` (generate_key), of
    ``brainstore mcp`` (its local key) and of ``import``/``rederive`` (a namespace of any other project
    is one no API call can reach).

    parse_key splits on "_"; the header carrying a key is Latin-1 on the server, so a key beyond ASCII is
    read as another key; and the Client (and the local MCP through it) refuses a key with a space or a
    character that is not printable, as httpx refuses control characters in a header: "sk_test_ac me_…"
    was issued and no Client could send it."""
    if not (project.isascii() and project.isprintable()) or " " in project:
        return False
    try:
        return parse_key(f"sk_{ENVIRONMENTS[0]}_{project}_secret").project == project
    except BrainstoreError:
        return False


def generate_key(env: str, project: str) -> str:
    if env not in ENVIRONMENTS:
        raise ValueError(f"env must be one of {ENVIRONMENTS}")
    if not named_project(project):
        raise ValueError(f"project {PROJECT_RULE}")
    # token_hex has no underscores, so the four-segment form holds.
    return f"sk_{env}_{project}_{secrets.token_hex(24)}"
