"""The key registry: a JSON file of issued keys, holding only hashes, never secrets.

File shape: ``{"keys": [{"id", "sha256", "prefix", "last4", "scopes", "brain", "created_at",
"revoked_at"}]}``. The file is re-read whenever its mtime or size changes, so a revocation takes effect
on the next request without a restart. A configured registry that cannot be read or parsed refuses
every key (key_registry_unreadable) rather than failing open.

Every change (``brainstore keys create``/``revoke``) reads, changes and replaces the whole file while
holding an exclusive ``flock`` on the sibling ``<name>.lock``: without it, two commands at once each
wrote back the copy they had read, and a key issued (or a revocation reported) by one was gone. The
server's reads take no lock: the file is replaced atomically, never written in place, and durably: a
key printed to the operator, or a revocation reported, must still be there after a power failure.
"""

from __future__ import annotations

import contextlib
import fcntl
import grp
import hmac
import json
import os
import pwd
import stat
import tempfile
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from brainstore.auth.keys import ALL_SCOPES, ParsedKey, generate_key, parse_key
from brainstore.errors import error


@dataclass(frozen=True)
class KeyEntry:
    id: str
    sha256: str
    prefix: str
    last4: str
    scopes: frozenset[str]
    brain: str | None
    created_at: str
    revoked_at: str | None


def _entry(raw: dict[str, Any]) -> KeyEntry:
    scopes = frozenset(raw["scopes"])
    if not scopes <= ALL_SCOPES:
        raise ValueError(f"unknown scopes {sorted(scopes - ALL_SCOPES)}")
    return KeyEntry(
        id=str(raw["id"]),
        sha256=str(raw["sha256"]),
        prefix=str(raw["prefix"]),
        last4=str(raw["last4"]),
        scopes=scopes,
        brain=raw.get("brain"),
        created_at=str(raw.get("created_at", "")),
        revoked_at=raw.get("revoked_at"),
    )


class RegistryError(Exception):
    """The registry file cannot be read, parsed, locked or written: what ``brainstore keys`` says, one line."""


def _reason(exc: OSError | ValueError) -> str:
    return (exc.strerror if isinstance(exc, OSError) else None) or str(exc)


def _user_name(uid: int) -> str:
    return pwd.getpwuid(uid).pw_name


def _group_name(gid: int) -> str:
    return grp.getgrgid(gid).gr_name


def _name(getter: Any, number: int) -> str:
    try:
        return str(getter(number))
    except KeyError:
        return str(number)


def _sync_directory(directory: Path) -> None:
    fd = os.open(directory, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


class KeyRegistry:
    def __init__(self, path: Path) -> None:
        self.path = path
        self._lock = threading.Lock()
        self._stamp: tuple[int, int] | None = None
        self._entries: list[KeyEntry] = []
        self._error: str | None = None
        #: What a change could not keep of the file it replaced (its owner or group), for the operator.
        self.notes: list[str] = []

    def _reload(self) -> None:
        try:
            stat = self.path.stat()
        except OSError as exc:
            self._stamp, self._error = None, f"cannot stat registry: {exc.strerror}"
            return
        stamp = (stat.st_mtime_ns, stat.st_size)
        if stamp == self._stamp:
            return
        try:
            document = json.loads(self.path.read_text(encoding="utf-8"))
            self._entries = [_entry(e) for e in document["keys"]]
            self._error = None
        except (OSError, ValueError, KeyError, TypeError) as exc:
            self._error = f"cannot parse registry: {type(exc).__name__}"
            self._entries = []
        self._stamp = stamp

    def lookup(self, key: ParsedKey) -> KeyEntry:
        with self._lock:
            self._reload()
            if self._error is not None:
                raise error("key_registry_unreadable", f"the key registry is unreadable ({self._error})")
            entries = self._entries
        digest = key.sha256
        match = None
        for entry in entries:
            # compare_digest on every candidate: the time taken does not depend on where a key differs.
            if hmac.compare_digest(entry.sha256, digest):
                match = entry
        if match is None:
            raise error("invalid_api_key", "Authorization: this key was not issued by this deployment")
        if match.revoked_at is not None:
            raise error("key_revoked", f"Authorization: key {match.prefix}…{match.last4} was revoked")
        return match

    # --- management (brainstore keys) -------------------------------------------------------------
    @property
    def lock_path(self) -> Path:
        return self.path.with_name(self.path.name + ".lock")

    @contextmanager
    def _changing(self) -> Iterator[None]:
        """Hold the registry against every other writer, in this process (threads) and in others
        (``flock`` on the lock file, created 0600 when missing), for one read-modify-write."""
        with self._lock:
            if self.path.is_dir():  # before a lock file is made beside it
                raise RegistryError(f"the key registry {self.path} is a directory, not a file")
            try:
                self.path.parent.mkdir(parents=True, exist_ok=True)
                fd = os.open(self.lock_path, os.O_RDONLY | os.O_CREAT | os.O_CLOEXEC, 0o600)
            except OSError as exc:
                raise RegistryError(f"cannot open the lock file {self.lock_path}: {_reason(exc)}") from exc
            try:
                fcntl.flock(fd, fcntl.LOCK_EX)
                yield
            finally:
                os.close(fd)  # releases the flock

    def _read_document(self) -> dict[str, Any]:
        """The file's document, every entry checked (none when it does not exist yet): a change never
        writes over a file it could not read, and a list never shows half of one."""
        try:
            text = self.path.read_text(encoding="utf-8")
        except FileNotFoundError:
            return {"keys": []}
        except IsADirectoryError as exc:
            raise RegistryError(f"the key registry {self.path} is a directory, not a file") from exc
        except (OSError, UnicodeDecodeError) as exc:
            raise RegistryError(f"cannot read the key registry {self.path}: {_reason(exc)}") from exc
        try:
            document = json.loads(text)
            if not isinstance(document, dict) or not isinstance(document.get("keys"), list):
                raise ValueError('it is not {"keys": [...]}')
            for raw in document["keys"]:
                if not isinstance(raw, dict):
                    raise ValueError("an entry is not an object")
                _entry(raw)
        except KeyError as exc:
            raise RegistryError(f"cannot parse the key registry {self.path}: an entry has no {exc}") from exc
        except (ValueError, TypeError) as exc:
            raise RegistryError(f"cannot parse the key registry {self.path}: {exc}") from exc
        return document

    def _write_document(self, document: dict[str, Any]) -> None:
        """Replace the file atomically. A new file is 0600; one that exists keeps its mode, and its owner
        and group as far as this process may set them: the file is replaced by one this user made, and a
        server running as another user that could read the old one (say 0640, group brainstore) would
        otherwise answer 500 key_registry_unreadable to every key. What could not be kept is added to
        :attr:`notes`."""
        try:
            old = os.stat(self.path)
        except FileNotFoundError:
            old = None
        try:
            fd, tmp = tempfile.mkstemp(dir=self.path.parent, prefix=".keys-")
        except OSError as exc:
            raise RegistryError(f"cannot write the key registry {self.path}: {_reason(exc)}") from exc
        try:
            with os.fdopen(fd, "w", encoding="utf-8") as handle:
                json.dump(document, handle, indent=2)
                handle.flush()
                if old is None:
                    os.fchmod(handle.fileno(), 0o600)
                else:
                    self._keep_owner(handle.fileno(), old)
                    os.fchmod(handle.fileno(), stat.S_IMODE(old.st_mode))  # after fchown, which may clear bits
                # On disk before the rename: else a crash can leave the new name on an empty file,
                # and every key refused (key_registry_unreadable).
                os.fsync(handle.fileno())
            os.replace(tmp, self.path)  # atomic: a reader never sees half a file
            _sync_directory(self.path.parent)  # the rename itself, else the key just printed can be lost
        except BaseException as exc:
            with contextlib.suppress(OSError):
                os.unlink(tmp)
            if isinstance(exc, OSError):
                raise RegistryError(f"cannot write the key registry {self.path}: {_reason(exc)}") from exc
            raise

    def _keep_owner(self, fd: int, old: os.stat_result) -> None:
        try:
            os.fchown(fd, old.st_uid, old.st_gid)
            return
        except PermissionError:
            pass
        kept_group = True
        try:
            os.fchown(fd, -1, old.st_gid)  # the owner of a file may give it a group of its own
        except PermissionError:
            kept_group = False
        mine = os.fstat(fd)
        lost = [
            f"{what} {_name(getter, was)} (now {_name(getter, now)})"
            for what, getter, was, now, kept in (
                ("owner", _user_name, old.st_uid, mine.st_uid, False),
                ("group", _group_name, old.st_gid, mine.st_gid, kept_group),
            )
            if not kept and was != now
        ]
        if lost:
            self.notes.append(
                f"{self.path}: could not keep its {' and '.join(lost)}; its mode "
                f"{stat.S_IMODE(old.st_mode):04o} is kept. A server running as another user may no longer "
                "read it: run keys commands as the file's owner (or root)"
            )

    def create(
        self, env: str, project: str, scopes: frozenset[str] = ALL_SCOPES, brain: str | None = None
    ) -> tuple[str, KeyEntry]:
        if not scopes <= ALL_SCOPES:
            raise ValueError(f"unknown scopes {sorted(scopes - ALL_SCOPES)}")
        raw = generate_key(env, project)
        parsed = parse_key(raw)
        entry = {
            "id": parsed.id,
            "sha256": parsed.sha256,
            "prefix": parsed.prefix,
            "last4": parsed.last4,
            "scopes": sorted(scopes),
            "brain": brain,
            "created_at": datetime.now(UTC).isoformat(),
            "revoked_at": None,
        }
        with self._changing():
            document = self._read_document()
            document["keys"].append(entry)
            self._write_document(document)
        return raw, _entry(entry)

    def list(self) -> list[KeyEntry]:
        return [_entry(e) for e in self._read_document()["keys"]]

    def revoke(self, key_id: str) -> KeyEntry:
        with self._changing():
            document = self._read_document()
            for raw in document["keys"]:
                if raw["id"] == key_id:
                    raw["revoked_at"] = raw["revoked_at"] or datetime.now(UTC).isoformat()
                    self._write_document(document)
                    return _entry(raw)
        raise KeyError(key_id)
