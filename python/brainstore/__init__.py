"""brainstore: a memory service for AI applications.

Records go in, cited temporal Memories come out, and a Context answers a task under a token budget.
"""

__version__ = "0.1.0"
