"""LoCoMo (Maharana et al., ACL 2024; CC BY-NC 4.0, research use only) for the benches: where the data
is, which conversations were tuned on, and the loader and scorer of :mod:`brainstore.bench.loader`
(the one LoCoMo loader; ``brainstore bench`` uses it too).

The data is never part of this repository. :func:`load_conversations` reads any of the three layouts
described in ``/work/shared/data/locomo/SOURCE.md``: the ``locomo10_v2/`` directory of ``<n>.json``
files, the upstream ``locomo10.zip``, or a ``locomo10.json`` list; ``root`` may be any of them or a
directory holding one. It returns ``[]`` when nothing is found, so benches can skip.

Scoring follows SOURCE.md and the baselines in NOTES.md: evidence ids are every ``D<s>:<t>`` found in
each evidence string, leading zeros dropped, ids matching no turn dropped; questions of categories
1-4 only, and questions left without evidence are skipped. A question's score is the share of its
evidence turns that were selected.
"""

from __future__ import annotations

from pathlib import Path

from brainstore.bench import loader
from brainstore.bench.loader import (
    Conversation,
    Question,
    Turn,
    evidence_turns,
    parse_session_date,
    score,
    scored_questions,
    turn_text,
)

__all__ = [
    "DEFAULT_ROOT",
    "HELD_OUT",
    "TUNING",
    "Conversation",
    "Question",
    "Turn",
    "evidence_turns",
    "load_conversations",
    "parse_session_date",
    "score",
    "scored_questions",
    "turn_text",
]

DEFAULT_ROOT = Path("/work/shared/data/locomo")
#: Conversations the retrieval pipeline was tuned on, and those it was only measured on.
TUNING = ("26", "30", "41", "42", "43")
HELD_OUT = ("44", "47", "48", "49", "50")


def load_conversations(root: Path = DEFAULT_ROOT) -> list[Conversation]:
    """Every conversation found at ``root`` (see the module docstring); ``[]`` when there is none."""
    return loader.load_conversations(root)
