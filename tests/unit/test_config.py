"""Defaults the configuration works out for itself."""

from __future__ import annotations

from pathlib import Path

import pytest

from brainstore import config
from brainstore.config import INDEX_BYTES_A_CHUNK, Config, default_duckdb_memory_mib, default_resident_chunks


def test_indexes_are_bounded_by_default_to_a_share_of_memory_split_between_the_workers(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    pages = {"SC_PAGE_SIZE": 4096, "SC_PHYS_PAGES": 4 << 20}  # 16 GiB
    monkeypatch.setattr(config.os, "sysconf", lambda name: pages[name])
    monkeypatch.setattr(config, "CGROUP_MEMORY_MAX", tmp_path / "memory.max")  # none: no container limit
    half = (8 << 30) // INDEX_BYTES_A_CHUNK
    assert default_resident_chunks(1) == half and default_resident_chunks(4) == half // 4
    assert Config().resident_chunks == half
    assert Config.from_env({}).resident_chunks == half
    assert Config.from_env({"BRAINSTORE_RESIDENT_CHUNKS": "0"}).resident_chunks == 0  # no limit, when asked
    assert Config.from_env({"BRAINSTORE_RESIDENT_CHUNKS": "5000"}).resident_chunks == 5000
    (tmp_path / "memory.max").write_text("2147483648\n")  # a container of 2 GiB
    assert default_resident_chunks(1) == (1 << 30) // INDEX_BYTES_A_CHUNK
    (tmp_path / "memory.max").write_text("max\n")
    assert default_resident_chunks(1) == half


def test_duckdb_takes_a_quarter_of_memory_by_default(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    pages = {"SC_PAGE_SIZE": 4096, "SC_PHYS_PAGES": 4 << 20}  # 16 GiB
    monkeypatch.setattr(config.os, "sysconf", lambda name: pages[name])
    monkeypatch.setattr(config, "CGROUP_MEMORY_MAX", tmp_path / "memory.max")
    assert default_duckdb_memory_mib() == 4096
    assert Config().duckdb_memory_mib == Config.from_env({}).duckdb_memory_mib == 4096
    assert Config.from_env({"BRAINSTORE_DUCKDB_MEMORY_MIB": "0"}).duckdb_memory_mib == 0  # DuckDB's own default
    assert Config.from_env({"BRAINSTORE_DUCKDB_MEMORY_MIB": "512"}).duckdb_memory_mib == 512
    with pytest.raises(ValueError, match="BRAINSTORE_DUCKDB_MEMORY_MIB must be an integer"):
        Config.from_env({"BRAINSTORE_DUCKDB_MEMORY_MIB": "1GB"})
    with pytest.raises(ValueError, match="duckdb_memory_mib must be 0"):
        Config(duckdb_memory_mib=-1)
    (tmp_path / "memory.max").write_text("2147483648\n")  # a container of 2 GiB
    assert default_duckdb_memory_mib() == 512
    (tmp_path / "memory.max").write_text("134217728\n")  # 128 MiB: never below 64
    assert default_duckdb_memory_mib() == 64


def test_memory_that_cannot_be_read_leaves_the_indexes_unbounded(monkeypatch: pytest.MonkeyPatch) -> None:
    def unknown(name: str) -> int:
        raise ValueError(name)

    monkeypatch.setattr(config.os, "sysconf", unknown)
    assert default_resident_chunks(1) == 0
    assert default_duckdb_memory_mib() == 0  # DuckDB's own default
