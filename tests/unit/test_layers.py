"""The layers of DESIGN.md, checked on every test run: import-linter's contracts (pyproject.toml), and
the rule about the native library, another distribution (brainstore-core) and so outside the contracts'
layers: only kernels.py imports ``brainstore_core``, and no module imports a ``_native`` extension."""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
PACKAGE = ROOT / "python" / "brainstore"


def test_the_import_contracts_hold() -> None:
    lint = Path(sys.executable).parent / "lint-imports"
    run = subprocess.run([str(lint), "--no-cache", "--no-logo"], cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert run.returncode == 0, run.stdout[-4000:] + run.stderr[-2000:]


def imports_native(name: str) -> bool:
    return name == "brainstore_core" or name.startswith("brainstore_core.") or name.endswith("_native")


def test_only_kernels_imports_the_native_library() -> None:
    importers = []
    for path in PACKAGE.rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            names = []
            if isinstance(node, ast.ImportFrom):
                names = [node.module or "", *(f"{node.module}.{a.name}" for a in node.names)]
            elif isinstance(node, ast.Import):
                names = [a.name for a in node.names]
            if any(imports_native(n) for n in names):
                importers.append(path.relative_to(PACKAGE).as_posix())
    assert importers == ["kernels.py"]
