"""``brainstore import``: reconcile Records from an external source, from a JSON Lines file.

Each line: ``{"external_id": "...", "content": <string or typed shape>, "occurred_at": "...",
"visibility": "..."}`` (occurred_at and visibility optional). Invariants:

- Keyed by (source name, external_id) within the Brain: a pair already imported is skipped (counted
  unchanged), never duplicated, so re-running an import is a no-op and an interrupted one can resume.
- Lines are validated by the API's own ``record_create`` validation; a bad line is counted with its line
  number and reason and never stops the import.
- Records are written through the Service with ``origin="import"``: they are Records "reconciled from an
  external source", so the API's forgetRecord answers 403 record_not_erasable for them.

Import writes to the data directory directly (it is not an API operation), so the server must be
stopped while it runs: DuckDB admits one process per file, and the open fails while a server holds it.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from brainstore.api import validation
from brainstore.auth.keys import ALL_SCOPES
from brainstore.domain import Principal
from brainstore.errors import BrainstoreError, invalid
from brainstore.service import Service
from brainstore.service.common import resolve_brain

LINE_FIELDS = ("external_id", "content", "occurred_at", "visibility")


@dataclass
class ImportReport:
    imported: int = 0
    unchanged: int = 0
    invalid: list[tuple[int, str]] = field(default_factory=list)  # (line number, reason)
    record_ids: list[str] = field(default_factory=list)

    def summary(self) -> str:
        return f"imported {self.imported}, unchanged {self.unchanged}, invalid {len(self.invalid)}"


def import_principal(env: str, project: str) -> Principal:
    """The operator running an import: the project's namespace, every scope, no key."""
    return Principal(
        env=env, project=project, scopes=ALL_SCOPES, key_label="brainstore import", key_hash="import"
    )


def parse_line(text: str, source_name: str) -> dict[str, Any]:
    """One JSON line -> the validated rememberRecord fields, or a BrainstoreError naming the field."""
    # strictly, as the API parses a body: a lone surrogate, a NUL, NaN or nesting past 64 levels in a
    # line was taken (or, nested deep, ended the import with a RecursionError)
    raw = validation.require_object(validation.parse_json(text.encode("utf-8", "surrogatepass"), "line"), "line")
    validation.reject_unknown(raw, LINE_FIELDS)
    if raw.get("external_id") is None:
        raise invalid("external_id", "is required")
    external_id = validation.string(raw["external_id"], "external_id", max_length=500)
    body: dict[str, Any] = {
        "content": raw.get("content"),
        "source": {"name": source_name, "external_id": external_id},
    }
    if "content" not in raw:
        del body["content"]
    for name in ("occurred_at", "visibility"):
        if raw.get(name) is not None:
            body[name] = raw[name]
    return validation.record_create(body)


def import_records(
    service: Service,
    principal: Principal,
    brain_id: str,
    source_name: str,
    lines: Iterable[str],
    *,
    progress: Any = None,
) -> ImportReport:
    """Import every line; ``progress`` (a tqdm bar, optional) is advanced once per line."""
    validation.string(source_name, "source", max_length=500)
    brain = resolve_brain(service.store, principal, brain_id)  # brain_not_found before reading anything
    report = ImportReport()
    for number, text in enumerate(lines, start=1):
        if progress is not None:
            progress.update(1)
        if not text.strip():
            continue  # blank lines (a trailing newline, spacing) are not records
        try:
            fields = parse_line(text, source_name)
            external_id = fields["source"]["external_id"]
            if service.store.find_imported_record(brain.uid, source_name, external_id) is not None:
                report.unchanged += 1
                continue
            reply = service.remember_record(
                principal,
                brain_id,
                content=fields["content"],
                source=fields["source"],
                visibility=fields["visibility"],
                occurred_at=fields["occurred_at"],
                origin="import",
            )
        except BrainstoreError as exc:
            if exc.code in ("brain_not_found", "not_implemented"):
                raise  # the whole import cannot proceed: not a property of this line
            report.invalid.append((number, f"{exc.code}: {exc.message}"))
            continue
        report.imported += 1
        report.record_ids.append(reply.body["id"])
    return report
