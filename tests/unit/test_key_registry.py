"""The key registry file as `brainstore keys` changes it: concurrent writers, the file's mode and owner.

(tests/api/test_auth.py has the server's side: lookups, revocation on the next request.)"""

from __future__ import annotations

import fcntl
import json
import multiprocessing
import os
import threading
from pathlib import Path

import pytest

from brainstore.auth.registry import KeyRegistry

WRITERS = 8
ROUNDS = 15


def _create_keys(path: str, start: threading.Barrier | None, rounds: int) -> list[str]:
    registry = KeyRegistry(Path(path))
    if start is not None:
        start.wait()
    return [registry.create("test", "acme")[1].id for _ in range(rounds)]


def _revoke_keys(path: str, start: threading.Barrier | None, key_ids: list[str]) -> list[str]:
    registry = KeyRegistry(Path(path))
    if start is not None:
        start.wait()
    return [registry.revoke(key_id).id for key_id in key_ids]


def test_concurrent_creators_and_revokers_lose_no_key_and_undo_no_revocation(tmp_path: Path) -> None:
    """Each `keys create`/`revoke` read the whole file, changed it and wrote it back, locked against its own
    threads only: two processes at once each wrote back the copy they had read. Run beside a create, a
    revoke printed "revoked key_..." (exit 0) and the key stayed active, 3 runs in 30; two creates at
    once, 80 keys printed and 70 in the registry. Here 4 processes create and 4 revoke, all at once."""
    path = tmp_path / "keys.json"
    registry = KeyRegistry(path)
    to_revoke = [registry.create("test", "acme")[1].id for _ in range(WRITERS // 2 * ROUNDS)]
    context = multiprocessing.get_context("spawn")
    with context.Manager() as manager:
        start = manager.Barrier(WRITERS)
        with context.Pool(WRITERS) as pool:
            created = [pool.apply_async(_create_keys, (str(path), start, ROUNDS)) for _ in range(WRITERS // 2)]
            revoked = [
                pool.apply_async(_revoke_keys, (str(path), start, to_revoke[i::WRITERS // 2]))
                for i in range(WRITERS // 2)
            ]
            issued = {key_id for result in created for key_id in result.get(timeout=120)}
            reported = {key_id for result in revoked for key_id in result.get(timeout=120)}
    assert len(issued) == WRITERS // 2 * ROUNDS and reported == set(to_revoke)
    stored = {entry.id: entry for entry in registry.list()}
    assert issued - stored.keys() == set(), "keys issued to users but missing from the registry"
    assert {key_id for key_id in reported if stored[key_id].revoked_at is None} == set(), "revocations undone"
    assert len(stored) == len(issued) + len(to_revoke)
    assert all(stored[key_id].revoked_at is None for key_id in issued)


def test_a_change_waits_for_the_lock_another_process_holds(tmp_path: Path) -> None:
    """The lock is a flock on <registry>.lock, shared with every process: while it is held elsewhere no
    change is written; the server's reads do not take it."""
    path = tmp_path / "keys.json"
    registry = KeyRegistry(path)
    _, first = registry.create("test", "acme")
    lock = os.open(registry.lock_path, os.O_RDONLY)
    assert registry.lock_path == tmp_path / "keys.json.lock"
    assert (os.stat(registry.lock_path).st_mode & 0o777) == 0o600
    fcntl.flock(lock, fcntl.LOCK_EX)
    done = threading.Event()
    waiting = threading.Thread(target=lambda: (KeyRegistry(path).revoke(first.id), done.set()))
    try:
        waiting.start()
        assert not done.wait(0.5), "the revoke wrote while another process held the lock"
        assert json.loads(path.read_text())["keys"][0]["revoked_at"] is None
        assert [e.id for e in KeyRegistry(path).list()] == [first.id]  # reads need no lock
    finally:
        os.close(lock)
    waiting.join(10)
    assert done.is_set() and registry.list()[0].revoked_at is not None


def _mode(path: Path) -> int:
    return os.stat(path).st_mode & 0o7777


def test_a_change_keeps_the_mode_of_the_file_it_replaces(tmp_path: Path) -> None:
    """Every create and revoke made the registry 0600: a server that read it as another user through its
    group (0640) then answered 500 key_registry_unreadable to every key. A new file is still 0600."""
    path = tmp_path / "keys.json"
    registry = KeyRegistry(path)
    _, first = registry.create("test", "acme")
    assert _mode(path) == 0o600
    path.chmod(0o640)
    registry.create("test", "acme")
    assert _mode(path) == 0o640
    path.chmod(0o644)
    registry.revoke(first.id)
    assert _mode(path) == 0o644
    assert registry.notes == []
    assert not [p.name for p in tmp_path.iterdir() if p.name.startswith(".keys-")]  # no temporary left


def test_a_change_keeps_the_owner_and_group_when_it_may(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """As root the owner and group are kept; a user who may not set them keeps the mode and is told so."""
    path = tmp_path / "keys.json"
    registry = KeyRegistry(path)
    registry.create("test", "acme")
    path.chmod(0o640)
    if os.geteuid() == 0:
        os.chown(path, 65534, 65534)
        registry.create("test", "acme")
        assert (os.stat(path).st_uid, os.stat(path).st_gid, _mode(path)) == (65534, 65534, 0o640)
        assert registry.notes == []

        def refuse(fd: int, uid: int, gid: int) -> None:
            raise PermissionError(1, "Operation not permitted")

        monkeypatch.setattr(os, "fchown", refuse)
        registry.create("test", "acme")
        assert (os.stat(path).st_uid, _mode(path)) == (0, 0o640)
        assert len(registry.notes) == 1 and "could not keep its owner" in registry.notes[0]
        assert "group" in registry.notes[0] and "mode 0640 is kept" in registry.notes[0]
    else:
        # not root: the file is this user's; keeping its own owner and group needs no privilege
        registry.create("test", "acme")
        assert (os.stat(path).st_uid, _mode(path)) == (os.geteuid(), 0o640) and registry.notes == []
    assert len(registry.list()) == 3


def test_a_failed_write_leaves_the_registry_and_no_temporary(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A write that fails (a full disk) is a RegistryError, `brainstore keys` says it in one line; the
    registry is as it was and no .keys-* file is left beside it."""
    from brainstore.auth.registry import RegistryError

    path = tmp_path / "keys.json"
    registry = KeyRegistry(path)
    registry.create("test", "acme")
    before = path.read_bytes()

    def full(src: str, dst: str) -> None:
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(os, "replace", full)
    with pytest.raises(RegistryError, match=f"cannot write the key registry {path}: No space left on device"):
        registry.create("test", "acme")
    assert path.read_bytes() == before
    assert sorted(p.name for p in tmp_path.iterdir()) == ["keys.json", "keys.json.lock"]


def test_a_change_is_on_disk_before_it_is_renamed_into_place_and_the_rename_too(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The new file was renamed over the registry unsynced, and the directory never synced: after a power
    failure a key `keys create` had printed could be gone, or the registry an empty file, which refuses
    every tenant's key."""
    path = tmp_path / "keys.json"
    calls: list[tuple[str, int]] = []
    real_fsync, real_replace = os.fsync, os.replace

    def fsync(fd: int) -> None:
        calls.append(("fsync", os.fstat(fd).st_ino))
        real_fsync(fd)

    def replace(src: str, dst: str) -> None:
        calls.append(("replace", os.stat(src).st_ino))
        real_replace(src, dst)

    monkeypatch.setattr(os, "fsync", fsync)
    monkeypatch.setattr(os, "replace", replace)
    key = KeyRegistry(path).create("test", "acme")[1]
    created = list(calls)
    calls.clear()
    KeyRegistry(path).revoke(key.id)
    revoked = os.stat(path).st_ino
    directory = os.stat(tmp_path).st_ino
    assert created[1:] == [("replace", created[0][1]), ("fsync", directory)] and created[0][0] == "fsync"
    assert calls == [("fsync", revoked), ("replace", revoked), ("fsync", directory)]


def test_a_temporary_a_crash_left_half_written_breaks_neither_lookups_nor_changes(tmp_path: Path) -> None:
    from brainstore.auth.keys import parse_key

    path = tmp_path / "keys.json"
    raw, entry = KeyRegistry(path).create("test", "acme")
    (tmp_path / ".keys-crashed").write_text('{"keys": [{"id": "key_', encoding="utf-8")
    registry = KeyRegistry(path)
    assert registry.lookup(parse_key(raw)).id == entry.id
    registry.create("test", "acme")
    assert len(KeyRegistry(path).list()) == 2
