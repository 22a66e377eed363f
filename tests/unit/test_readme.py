"""The README's copy-paste examples run as written (keys, import, the MCP configuration)."""

from __future__ import annotations

import json
import re
import shlex
import subprocess
import sys
from pathlib import Path
from typing import Any

README = Path(__file__).resolve().parents[2] / "README.md"


def blocks(language: str, after_heading: str) -> list[str]:
    text = README.read_text(encoding="utf-8")
    section = text.split(f"## {after_heading}\n", 1)[1].split("\n## ", 1)[0]
    return re.findall(rf"```{language}\n(.*?)```", section, re.S)


def run(line: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    command = line.split("  #")[0].strip()
    args = shlex.split(command)
    assert args[0] == "brainstore", command
    return subprocess.run(
        [sys.executable, "-m", "brainstore.cli", *args[1:]], cwd=cwd, capture_output=True, text=True, timeout=120
    )


def test_key_management_example(tmp_path: Path) -> None:
    (script,) = blocks("bash", "Keys")
    lines = [line for line in script.splitlines() if line.strip()]
    created = run(lines[0], tmp_path)
    assert created.returncode == 0, created.stderr
    key = created.stdout.strip()
    assert re.fullmatch(r"sk_test_acme_[0-9a-f]+", key)
    assert run(lines[1], tmp_path).returncode == 0
    listed = run(lines[2], tmp_path)
    assert key not in listed.stdout and "sk_test_acme…" in listed.stdout
    key_id = listed.stdout.split()[0]
    revoked = run(lines[3].replace("KEY_ID", key_id), tmp_path)
    assert revoked.returncode == 0 and key_id in revoked.stdout
    assert key not in (tmp_path / "keys.json").read_text()


def test_import_example(tmp_path: Path) -> None:
    (script,) = blocks("bash", "Import")
    echo, command = [line for line in script.splitlines() if line.strip()]
    subprocess.run(["bash", "-c", echo], cwd=tmp_path, check=True)
    result = run(command, tmp_path)
    assert result.returncode == 0, result.stderr
    assert "imported 1, unchanged 0, invalid 0" in result.stdout
    again = run(command, tmp_path)  # re-import reconciles, never duplicates
    assert again.returncode == 0, again.stderr
    assert "imported 0, unchanged 1, invalid 0" in again.stdout


def test_mcp_configuration_names_a_runnable_command() -> None:
    (config,) = blocks("json", "MCP")
    server = json.loads(config)["mcpServers"]["brainstore"]
    assert server["command"] == "brainstore"
    result = subprocess.run(
        [sys.executable, "-m", "brainstore.cli", *server["args"], "--help"], capture_output=True, text=True, timeout=60
    )
    assert result.returncode == 0 and "--brain" in result.stdout


def test_python_client_example(monkeypatch: Any, tmp_path: Path) -> None:
    """The client example, run as written against the API in this process (its URL's server replaced by
    an in-process transport to an app that knows the example's key)."""
    import httpx

    from brainstore import client as client_module
    from brainstore.api.app import create_app
    from tests.conftest import KEY, open_engine

    (example,) = blocks("python", "The Python client")
    assert KEY in example
    service = open_engine("memory", tmp_path)
    app = create_app(service)
    real = client_module.Client

    def in_process_client(base_url: str, api_key: str, **kw: Any) -> Any:
        return real(base_url, api_key, transport=client_module.in_process(app), **kw)

    monkeypatch.setattr(client_module, "Client", in_process_client)
    try:
        exec(compile(example, "README.md", "exec"), {"__name__": "readme_example", "httpx": httpx})
    finally:
        service.stop()
