"""``brainstore import``: reconcile Records from an external source, from a JSON Lines file.

Each line: ``{"external_id": "...", "content": <string or typed shape>, "occurred_at": "...",
"visibility": "..."}`` (occurred_at and visibility optional). Invariants:

- Keyed by (source name, external_id) within the Brain: a pair already imported is skipped (counted
  unchanged), never duplicated, so re-running an import is a no-op and an interrupted one can resume.
  The pair is looked up again inside the write, under the Brain's write lock, so two imports running
  at once (PostgreSQL admits several processes) cannot both write it.
- Lines are separated by "\n" only, as JSON Lines are: a CR is JSON white space inside a line (the
  text-mode reading that split lines at a CR too made one valid line two bad ones). Each line must be
  UTF-8, decoded strictly, and at most the API's body limit (``MAX_BODY``): a line the API would refuse
  as a body is refused here too (an 8 MiB event got in). The rest of such a line is skipped up to its
  "\n", at most MAX_SKIP bytes: an input whose line never ends stops the import there
  (``ImportReport.stopped``), as ``brainstore import /dev/zero`` read for ever.
- Lines are validated by the API's own ``record_create`` validation; a bad line is counted, handed
  with its line number and reason to ``on_invalid`` as it is met, and never stops the import.
- Nothing is kept per line: the report holds counts, and what the caller wants of each line (the
  reasons, the Record ids) it is handed as the line is read. The report had kept every reason and
  every Record id, about 200 bytes a line: a few hundred MB of input held as much again in memory.
- Records are written through the Service with ``origin="import"``: they are Records "reconciled from an
  external source", so the API's forgetRecord answers 403 record_not_erasable for them.

Import writes to the data directory directly (it is not an API operation), so the server must be
stopped while it runs: DuckDB admits one process per file, and the open fails while a server holds it.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from typing import Any, BinaryIO

from brainstore.api import validation
from brainstore.api.resources import MAX_BODY
from brainstore.auth.keys import ALL_SCOPES
from brainstore.domain import Principal
from brainstore.errors import BrainstoreError, invalid
from brainstore.service import Service
from brainstore.service.common import resolve_brain

LINE_FIELDS = ("external_id", "content", "occurred_at", "visibility")
JSON_WHITESPACE = b" \t\r\n"


@dataclass
class ImportReport:
    imported: int = 0
    unchanged: int = 0
    invalid: int = 0
    lines: int = 0  # lines done
    interrupted: bool = False  # stop() ended the import before line ``lines + 1``
    stopped: tuple[int, str] | None = None  # (line number, reason): the import ended there (EndlessLine)

    def summary(self) -> str:
        return f"imported {self.imported}, unchanged {self.unchanged}, invalid {self.invalid}"


def import_principal(env: str, project: str) -> Principal:
    """The operator running an import: the project's namespace, every scope, no key."""
    return Principal(
        env=env, project=project, scopes=ALL_SCOPES, key_label="brainstore import", key_hash="import"
    )


#: The most bytes of a line too long to import that are read past its first MAX_BODY, looking for
#: its end, before the import stops: an input that never ends a line (a pipe of zeros) otherwise
#: kept the command reading for ever.
MAX_SKIP = 256 * MAX_BODY


class EndlessLine(Exception):
    """A line did not end within MAX_SKIP bytes past its first MAX_BODY: the import stops at it."""

    def __init__(self, number: int) -> None:
        self.number = number
        self.reason = (
            f"has no end of line (\\n) in its first {(MAX_BODY + MAX_SKIP) >> 20} MiB: the import stopped here"
        )
        super().__init__(f"line {number}: {self.reason}")


def jsonl_lines(handle: BinaryIO) -> Iterator[bytes]:
    """The lines of a JSON Lines file opened in binary mode, each without its "\n".

    A line longer than MAX_BODY is cut one byte past it, enough for :func:`parse_line` to refuse it: no
    line is held whole, however long. The rest of it is skipped, up to its "\n" and MAX_SKIP bytes at
    most: past those, :class:`EndlessLine` (once the cut line was yielded and counted invalid)."""
    number = 0
    while line := handle.readline(MAX_BODY + 1):  # a binary file's lines end at b"\n" only
        number += 1
        if line.endswith(b"\n"):
            yield line[:-1]
            continue
        yield line  # the last line, or one cut
        skipped = 0
        while (rest := handle.readline(MAX_BODY)) and not rest.endswith(b"\n"):
            skipped += len(rest)
            if skipped > MAX_SKIP:
                raise EndlessLine(number)


def parse_line(line: bytes, source_name: str) -> dict[str, Any]:
    """One JSON line -> the validated rememberRecord fields, or a BrainstoreError naming the field."""
    if len(line) > MAX_BODY:
        raise invalid("line", f"must be at most {MAX_BODY} bytes, as a rememberRecord body")
    try:
        # A body may begin with a byte order mark (json.detect_encoding), so a line may too.
        text = line.decode("utf-8").removeprefix("\ufeff")
    except UnicodeDecodeError as exc:
        # one such byte in a file ended the whole import with a traceback
        raise invalid("line", f"is not UTF-8 (byte {exc.start + 1} is 0x{line[exc.start]:02x})") from None
    # strictly, as the API parses a body: a lone surrogate, a NUL, NaN or nesting past 64 levels in a
    # line was taken (or, nested deep, ended the import with a RecursionError)
    raw = validation.require_object(validation.parse_json_text(text, "line"), "line")
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
    lines: Iterable[bytes],
    *,
    progress: Any = None,
    on_invalid: Callable[[int, str], None] | None = None,
    on_imported: Callable[[int, str], None] | None = None,
    report: ImportReport | None = None,
    stop: Callable[[], bool] | None = None,
) -> ImportReport:
    """Import every line (:func:`jsonl_lines`); ``progress`` (a tqdm bar, optional) is advanced once per
    line. ``on_invalid(line number, reason)`` and ``on_imported(line number, Record id)`` are called as
    each line is done; ``report``, when given, is the one counted into (what was done so far, should
    the import be interrupted). ``stop()``, asked before each line, ends the import there when true
    (``report.interrupted``). A line that never ends (:class:`EndlessLine`) ends the import:
    ``report.stopped``."""
    validation.string(source_name, "source", max_length=500)
    brain = resolve_brain(service.store, principal, brain_id)  # brain_not_found before reading anything
    report = report if report is not None else ImportReport()
    try:
        for number, line in enumerate(lines, start=1):
            if stop is not None and stop():
                report.interrupted = True
                break
            report.lines = number
            if progress is not None:
                progress.update(1)
            if not line.strip(JSON_WHITESPACE):
                continue  # blank lines (spacing, a CRLF's CR) are not records
            try:
                fields = parse_line(line, source_name)
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
                if reply.status != 202:  # another import wrote it since the look-up above
                    report.unchanged += 1
                    continue
            except BrainstoreError as exc:
                if exc.code in ("brain_not_found", "not_implemented"):
                    raise  # the whole import cannot proceed: not a property of this line
                report.invalid += 1
                if on_invalid is not None:
                    on_invalid(number, f"{exc.code}: {exc.message}")
                continue
            report.imported += 1
            if on_imported is not None:
                on_imported(number, reply.body["id"])
    except EndlessLine as exc:
        report.stopped = (exc.number, exc.reason)
    return report
