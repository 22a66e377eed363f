"""``brainstore bench``: retrieval budgets measured through the HTTP contract.

- :mod:`~brainstore.bench.loader` reads LoCoMo conversations (zip, folder, file) and JSON Lines of
  questions; it is the one LoCoMo loader (``benches/locomo.py`` reuses it).
- :mod:`~brainstore.bench.runner` creates a Brain per conversation, posts the turns, waits until every
  Record is ready, asks every question at every budget and mode, and forgets the Brains it created.
- :mod:`~brainstore.bench.report` aggregates evidence recall, tokens and client-side latency, and
  writes the JSON report and the plot.
- :mod:`~brainstore.bench.command` is the CLI command; :mod:`~brainstore.bench.arguments` its flags.
"""
