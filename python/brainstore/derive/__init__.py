"""Record -> Memories: atomic assertions with subjects, owners, attributes and valid times.

A leaf layer: imports nothing from brainstore (no store, service, api). The public surface:

- :class:`SourceText`, :class:`Assertion`, :class:`Extractor` (the provider protocol)
- :func:`source_text` builds the SourceText for a stored content dict
- :class:`RuleExtractor` ("rules-v2"), the deterministic offline default; :func:`default_extractor`
- :func:`named_periods`: the periods a text names ("in October 2023", "last week"), for queries;
  :func:`warm_up` loads the date parser ahead of the first request
- :data:`UNKNOWN_START`: the valid_from of a state known only to have ended ("I used to live in Dublin")
"""

from .extract import RuleExtractor, default_extractor, source_text
from .model import SINGLE_VALUED, Assertion, Extractor, SourceText
from .timeexpr import UNKNOWN_START, named_periods, warm_up

__all__ = [
    "SINGLE_VALUED",
    "UNKNOWN_START",
    "Assertion",
    "Extractor",
    "RuleExtractor",
    "SourceText",
    "default_extractor",
    "named_periods",
    "source_text",
    "warm_up",
]
