"""The arguments of ``brainstore bench``, apart from the command so that building the CLI's parser
imports nothing heavy."""

from __future__ import annotations

import argparse
from collections.abc import Callable
from typing import Any

__all__ = ["add_arguments"]


def add_arguments(parser: argparse.ArgumentParser, env: Callable[[str, Any], Any]) -> None:
    target = parser.add_argument_group("target (one of)")
    target.add_argument("--url", default=env("URL", None), help="a running server's /v1 URL (BRAINSTORE_URL)")
    target.add_argument("--key", default=env("API_KEY", None), help="API key for --url (BRAINSTORE_API_KEY)")
    target.add_argument("--data-dir", default=None, help="run the embedded engine on this data directory")
    target.add_argument("--engine", choices=("duckdb", "memory"), default="duckdb", help="embedded engine")
    target.add_argument(
        "--project",
        default=None,
        help="embedded engine: the project whose Brains are read and made, as `brainstore import --project` "
        "names it (default BRAINSTORE_PROJECT, else bench)",
    )
    target.add_argument(
        "--env", choices=("test", "live"), default=None, help="embedded engine: the project's environment (default test)"
    )
    parser.add_argument(
        "--data",
        required=True,
        help="LoCoMo conversations (the release zip, a folder of JSON files, or one JSON file), or JSON "
        'Lines (.jsonl) of {"query", "evidence": [external_id, ...], "category"?}',
    )
    parser.add_argument("--conversations", default=None, help="LoCoMo: only these ids, e.g. 44,47")
    parser.add_argument("--brain", default=None, help="JSON Lines: the Brain holding the imported Records")
    parser.add_argument("--budgets", default="500,1000,2000", help="token budgets (default 500,1000,2000)")
    parser.add_argument("--modes", default="fast", help="fast, thorough or both (default fast)")
    parser.add_argument("--json", dest="json_path", default=None, metavar="OUT.json", help="write the report")
    parser.add_argument("--plot", default=None, metavar="OUT.png", help="recall and latency against budget")
    parser.add_argument(
        "--brain-prefix", default="bench", help="prefix of the Brains created (default bench)"
    )
    parser.add_argument("--keep-brains", action="store_true", help="keep the Brains after a completed run")
    parser.add_argument(
        "--ready-timeout", type=float, default=600.0, help="seconds for a Brain's Records to be ready"
    )
