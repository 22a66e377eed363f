"""Record -> Memories: atomic assertions with subjects, owners, attributes and valid times.

A leaf layer: imports nothing from brainstore (no store, service, api). The public surface:

- :class:`SourceText`, :class:`Assertion`, :class:`Extractor` (the provider protocol)
- :func:`source_text` builds the SourceText for a stored content dict; :func:`extract_record` reads a
  stored Record in one picklable call
- :class:`RuleExtractor` ("rules-v2"), the deterministic offline default; :func:`default_extractor`
- :class:`LLMExtractor`, a model behind an OpenAI-compatible chat-completions endpoint (opt-in), its
  errors :class:`ExtractorUnavailable` (try again later) and :class:`LLMExtractionError`
- :func:`named_periods`: the periods a text names ("in October 2023", "last week"), for queries;
  :func:`warm_up` loads the date parser ahead of the first request
- :class:`ReaderProcess`: a process of its own for reading long texts, which a text may kill or outlast
  (:class:`ReaderEnded`) without taking the server with it
- :func:`transcript_parts`: a document that reads as a transcript ("Ann: ...") as its speakers' turns,
  which derivation and chunking read as messages
- :func:`restated`: a statement said again with another value (a correction's "I meant Portland")
- :data:`UNKNOWN_START`: the valid_from of a state known only to have ended ("I used to live in Dublin")
"""

from .apart import ReaderEnded, ReaderProcess
from .extract import RuleExtractor, default_extractor, extract_record, source_text
from .llm import LLMExtractionError, LLMExtractor
from .model import SINGLE_VALUED, Assertion, Extractor, ExtractorUnavailable, SourceText, restated
from .timeexpr import UNKNOWN_START, named_periods, warm_up
from .transcript import transcript_parts

__all__ = [
    "SINGLE_VALUED",
    "UNKNOWN_START",
    "Assertion",
    "Extractor",
    "ExtractorUnavailable",
    "LLMExtractionError",
    "LLMExtractor",
    "ReaderEnded",
    "ReaderProcess",
    "RuleExtractor",
    "SourceText",
    "default_extractor",
    "extract_record",
    "named_periods",
    "restated",
    "source_text",
    "transcript_parts",
    "warm_up",
]
