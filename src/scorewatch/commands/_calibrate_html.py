"""The calibration's table (terminal) and HTML page (`scorewatch calibrate --html`)."""

from __future__ import annotations

import html
from typing import IO, Any

__all__ = ["print_calibration", "render_calibration"]


def _num(value: Any, digits: int = 3) -> str:
    return "-" if value is None else f"{value:.{digits}f}"


def _measure(name: str, estimate: dict[str, Any] | None) -> tuple[str, str, str]:
    if estimate is None:
        return name, "-", "-"
    interval = f"[{_num(estimate['low'])}, {_num(estimate['high'])}]"
    return name, _num(estimate["value"]), f"{interval} n={estimate['n']}"


def _measures(document: dict[str, Any]) -> list[tuple[str, str, str]]:
    rows: list[tuple[str, str, str]] = []
    verdicts = document.get("verdicts")
    if verdicts is not None:
        rows.append(_measure("kappa (pass/fail labels)", verdicts["kappa"]))
        rows.append(_measure("accuracy", verdicts["accuracy"]))
        rows.append(_measure("false-pass rate", verdicts.get("false_pass_rate")))
        rows.append(_measure("false-fail rate", verdicts.get("false_fail_rate")))
    scale = document.get("scale")
    if scale is not None:
        rows.append(_measure("spearman", scale["spearman"]))
        rows.append(_measure("mean absolute error", scale["mae"]))
        rows.append(_measure("kappa at threshold", scale["at_threshold"]["kappa"]))
    return rows


def _people(item: dict[str, Any]) -> Any:
    return item["label_verdict"] if item["label_score"] is None else item["label_score"]


def print_calibration(document: dict[str, Any], stream: IO[str]) -> None:
    print(f"scorer {document['scorer']} ({document['labels']} labelled items)", file=stream)
    for name, value, interval in _measures(document):
        print(f"  {name:<26} {value:>7}  {interval}", file=stream)
    print(
        f"  threshold {_num(document['threshold'])}: kappa {_num(document['kappa_at_threshold'])}"
        f"; best threshold {_num(document['best_threshold'])}: kappa "
        f"{_num(document['best_kappa'])} (gain {_num(document['kappa_gain'])})",
        file=stream,
    )
    for item in document["disagreements"]:
        print(
            f"  disagrees: {item['run_id']}: judge {_num(item['judge_score'])}, "
            f"people {_people(item)}",
            file=stream,
        )
    for failure in document["failed"]:
        print(f"  failed: {failure}", file=stream)


def render_calibration(document: dict[str, Any]) -> str:
    """A page with the calibration section, like `scorewatch report`'s sections."""
    esc = html.escape
    rows = "".join(
        f"<tr><td>{esc(name)}</td><td>{esc(value)}</td><td>{esc(interval)}</td></tr>"
        for name, value, interval in _measures(document)
    )
    worst = "".join(
        f"<tr><td>{esc(str(item['run_id']))}</td><td>{_num(item['judge_score'])}</td>"
        f"<td>{esc(str(_people(item)))}</td><td>{esc(item['comment'] or '')}</td></tr>"
        for item in document["disagreements"]
    )
    title = f"Calibration of {document['scorer']}"
    return (
        f"<!doctype html><html><head><meta charset='utf-8'><title>{esc(title)}</title></head>"
        f"<body><section id='calibration'><h2>{esc(title)}</h2>"
        f"<p>{document['labels']} labelled items; threshold {_num(document['threshold'])} "
        f"(kappa {_num(document['kappa_at_threshold'])}); best threshold "
        f"{_num(document['best_threshold'])} (kappa {_num(document['best_kappa'])}, gain "
        f"{_num(document['kappa_gain'])}).</p>"
        f"<table><tr><th>measure</th><th>value</th><th>95% interval</th></tr>{rows}</table>"
        f"<h3>Worst disagreements</h3><table><tr><th>item</th><th>judge</th><th>people</th>"
        f"<th>comment</th></tr>{worst}</table></section></body></html>\n"
    )
