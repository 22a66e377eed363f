"""Turning a run's observations into numbers: per budget and mode, per category, per conversation.

Percentiles are nearest-rank (the smallest observed value with at least q% of the observations at or
below it), so every reported latency is one that was measured. Recall is the mean over questions of
each question's evidence recall; a pending Context counts as 0. Tokens are over the Contexts that were
served (a pending one served nothing).
"""

from __future__ import annotations

import json
import math
import statistics
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

from brainstore.bench.runner import Observation

__all__ = [
    "LOCOMO_CATEGORY_NAMES",
    "PlotUnavailable",
    "percentile",
    "plot",
    "require_matplotlib",
    "summarize",
    "table",
    "write_json",
]

LOCOMO_CATEGORY_NAMES = {"1": "multi-hop", "2": "temporal", "3": "open-domain", "4": "single-hop"}


class PlotUnavailable(RuntimeError):
    """--plot was asked for without matplotlib installed."""


def percentile(values: Iterable[float], q: float) -> float | None:
    """Nearest-rank percentile ``q`` (0-100] of ``values``; None when there are none."""
    ordered = sorted(values)
    if not ordered:
        return None
    rank = max(math.ceil(q / 100 * len(ordered)), 1)
    return ordered[rank - 1]


def _row(observations: Sequence[Observation]) -> dict[str, Any]:
    tokens = [o.tokens_used for o in observations if o.tokens_used is not None]
    latencies = [o.latency_ms for o in observations]
    p50, p99 = percentile(latencies, 50), percentile(latencies, 99)
    return {
        "recall": round(statistics.fmean(o.recall for o in observations), 4) if observations else None,
        "tokens_used_p50": percentile(tokens, 50),
        "latency_ms_p50": None if p50 is None else round(float(p50), 2),
        "latency_ms_p99": None if p99 is None else round(float(p99), 2),
        "questions": len(observations),
        "pending": sum(o.pending for o in observations),
    }


def _groups(observations: Sequence[Observation], attribute: str) -> list[str]:
    seen = {getattr(o, attribute) for o in observations if getattr(o, attribute) is not None}
    return sorted(seen, key=lambda v: (0, int(v), "") if v.isdigit() else (1, 0, v))


def summarize(
    observations: Sequence[Observation],
    budgets: Sequence[int],
    modes: Sequence[str],
    run: dict[str, Any] | None = None,
) -> dict[str, Any]:
    """The JSON report: ``results`` (one row per budget and mode), ``by_category`` (when the data has
    categories), ``by_conversation``, and ``run`` (what was measured, where, and how the run went)."""
    results, by_category, by_conversation = [], [], []
    categories = _groups(observations, "category")
    targets = _groups(observations, "target")
    for mode in modes:
        for budget in budgets:
            cell = [o for o in observations if o.mode == mode and o.budget == budget]
            results.append({"budget": budget, "mode": mode, **_row(cell)})
            for category in categories:
                part = [o for o in cell if o.category == category]
                by_category.append(
                    {
                        "budget": budget,
                        "mode": mode,
                        "category": category,
                        **_pick(_row(part), "recall", "questions"),
                    }
                )
            for target in targets:
                part = [o for o in cell if o.target == target]
                by_conversation.append(
                    {
                        "budget": budget,
                        "mode": mode,
                        "conversation": target,
                        **_pick(_row(part), "recall", "questions"),
                    }
                )
    return {
        "results": results,
        "by_category": by_category,
        "by_conversation": by_conversation,
        "run": run or {},
    }


def _pick(row: dict[str, Any], *keys: str) -> dict[str, Any]:
    return {k: row[k] for k in keys}


def write_json(path: Path, summary: dict[str, Any]) -> None:
    Path(path).write_text(json.dumps(summary, indent=2) + "\n", encoding="utf-8")


def _fmt(value: Any, digits: int = 1) -> str:
    if value is None:
        return "-"
    if isinstance(value, float):
        return f"{value:.{digits}f}"
    return str(value)


def table(summary: dict[str, Any], category_names: dict[str, str] | None = None) -> str:
    """Markdown tables: the results, then recall per category when the data has categories."""
    lines = [
        "| mode | budget | recall | tokens used p50 | latency p50 (ms) | latency p99 (ms) | questions | pending |",
        "|---|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for r in summary["results"]:
        lines.append(
            f"| {r['mode']} | {r['budget']} | {_fmt(r['recall'], 3)} | {_fmt(r['tokens_used_p50'])} | "
            f"{_fmt(r['latency_ms_p50'])} | {_fmt(r['latency_ms_p99'])} | {r['questions']} | {r['pending']} |"
        )
    categories = list(dict.fromkeys(c["category"] for c in summary["by_category"]))
    if categories:
        names = category_names or {}
        heads = [f"{c} {names[c]}" if c in names else c for c in categories]
        lines += ["", "| mode | budget | " + " | ".join(heads) + " |", "|---|---:|" + "---:|" * len(heads)]
        for r in summary["results"]:
            cells = {
                c["category"]: c
                for c in summary["by_category"]
                if c["budget"] == r["budget"] and c["mode"] == r["mode"]
            }
            values = [f"{_fmt(cells[c]['recall'], 3)} ({cells[c]['questions']})" for c in categories]
            lines.append(f"| {r['mode']} | {r['budget']} | " + " | ".join(values) + " |")
    return "\n".join(lines)


def require_matplotlib() -> Any:
    """matplotlib's pyplot on a non-interactive backend, or :class:`PlotUnavailable` saying how to get it."""
    try:
        import matplotlib
    except ImportError:
        raise PlotUnavailable(
            "--plot needs matplotlib, an optional extra: pip install 'brainstore[bench]'"
        ) from None
    matplotlib.use("Agg")  # files only: never a display
    import matplotlib.pyplot as plt

    return plt


def plot(summary: dict[str, Any], path: Path, title: str | None = None) -> None:
    """Recall, and client-side latency p50/p99, against budget: one line per mode."""
    plt = require_matplotlib()
    modes = list(dict.fromkeys(r["mode"] for r in summary["results"]))
    fig, (left, right) = plt.subplots(1, 2, figsize=(7.5, 3.0), dpi=100)
    try:
        for mode in modes:
            rows = sorted((r for r in summary["results"] if r["mode"] == mode), key=lambda r: r["budget"])
            budgets = [r["budget"] for r in rows]
            left.plot(budgets, [r["recall"] for r in rows], marker="o", label=mode)
            (line,) = right.plot(
                budgets, [r["latency_ms_p50"] for r in rows], marker="o", label=f"{mode} p50"
            )
            right.plot(
                budgets, [r["latency_ms_p99"] for r in rows], marker="s", linestyle="--", color=line.get_color(),
                label=f"{mode} p99",
            )  # fmt: skip
        left.set(xlabel="budget (tokens)", ylabel="evidence recall", ylim=(0, 1), title="recall")
        right.set(xlabel="budget (tokens)", ylabel="ms (client side)", title="latency")
        right.set_ylim(bottom=0)
        for axis in (left, right):
            axis.grid(alpha=0.3)
            axis.legend(fontsize="small")
        if title:
            fig.suptitle(title, fontsize="medium")
        fig.tight_layout()
        fig.savefig(path)
    finally:
        plt.close(fig)
