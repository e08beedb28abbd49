"""A self-contained HTML report of an evaluation: one file, no external scripts or fonts.

Charts are drawn in the browser by a short inline script into SVG, from the data embedded in the
page; every text that came from the dataset or the judge is HTML-escaped.
"""

from __future__ import annotations

import html
import json
from collections.abc import Mapping, Sequence
from typing import Any

from ..evals.compare import Comparison, ItemChange
from ..evals.noise import ScorerNoise
from ._eval_output import interval_text
from ._summary import ScorerSummary, summarize_records

__all__ = ["render_report"]

_STYLE = """
body{font-family:system-ui,-apple-system,'Segoe UI',sans-serif;margin:2rem;color:#1f2328;
  max-width:1100px}
h1{font-size:1.6rem}h2{font-size:1.2rem;margin-top:2rem;border-bottom:1px solid #d0d7de}
table{border-collapse:collapse;width:100%;font-size:.9rem}
th,td{border-bottom:1px solid #eaeef2;padding:.35rem .5rem;text-align:left;vertical-align:top}
th{background:#f6f8fa}td.num{text-align:right;font-variant-numeric:tabular-nums}
.charts{display:flex;flex-wrap:wrap;gap:1.5rem}.chart{border:1px solid #d0d7de;padding:.5rem}
.chart h3{font-size:.95rem;margin:.2rem 0 .5rem}.muted{color:#656d76}.err{color:#cf222e}
.worse{color:#cf222e}.better{color:#1a7f37}.verdict{font-weight:600}
"""

_SCRIPT = """
(function(){
const data = JSON.parse(document.getElementById('report-data').textContent);
const NS = 'http://www.w3.org/2000/svg';
function el(name, attrs, text){const e=document.createElementNS(NS,name);
  for(const k in attrs){e.setAttribute(k,attrs[k]);}
  if(text!==undefined){e.textContent=text;} return e;}
function bars(svg, labels, values, maxValue, color){
  const w=+svg.getAttribute('width'), h=+svg.getAttribute('height'), pad=30;
  const n=values.length, bw=(w-pad*2)/Math.max(n,1);
  svg.appendChild(el('line',{x1:pad,y1:h-pad,x2:w-pad,y2:h-pad,stroke:'#8c959f'}));
  values.forEach(function(v,i){
    const bh=maxValue>0?(h-pad*2)*v/maxValue:0;
    svg.appendChild(el('rect',{x:pad+i*bw+2,y:h-pad-bh,width:Math.max(bw-4,1),height:bh,
      fill:color,'class':'bar','data-value':v}));
    svg.appendChild(el('text',{x:pad+i*bw+bw/2,y:h-pad+14,'font-size':10,'text-anchor':'middle'},
      labels[i]));
  });
}
data.scorers.forEach(function(s, index){
  const svg=document.getElementById('hist-'+index);
  const counts=s.histogram; bars(svg, counts.map(function(_,i){return (i/10).toFixed(1);}),
    counts, Math.max.apply(null, counts.concat([1])), '#0969da');
});
const means=document.getElementById('means');
bars(means, data.scorers.map(function(s){return s.id;}),
  data.scorers.map(function(s){return s.mean===null?0:s.mean;}),
  Math.max.apply(null, data.scorers.map(function(s){return s.scale;}).concat([1])), '#1a7f37');
document.body.setAttribute('data-charts-rendered',
  String(document.querySelectorAll('rect.bar').length));
const deltas=document.getElementById('deltas');
if(deltas && data.comparison){
  // One bar per scorer from a zero line: up (green) when better, down (red) when worse.
  const w=+deltas.getAttribute('width'), h=+deltas.getAttribute('height'), pad=30, mid=h/2;
  const rows=data.comparison, n=rows.length, bw=(w-pad*2)/Math.max(n,1);
  // The whisker on each bar is the confidence interval of the change (item sampling and the
  // judge's noise); the dashed line is the allowed drop.
  const ends=rows.map(function(r){return r.interval?Math.max(Math.abs(r.interval[0]),
    Math.abs(r.interval[1])):0;});
  const top=Math.max.apply(null, rows.map(function(r){return Math.abs(r.change||0);})
    .concat(ends, [data.maxDrop*2, 1e-9]));
  const y=function(v){return mid-(mid-pad)*v/top;};
  deltas.appendChild(el('line',{x1:pad,y1:y(-data.maxDrop),x2:w-pad,y2:y(-data.maxDrop),
    stroke:'#cf222e','stroke-dasharray':'4 3','class':'max-drop'}));
  deltas.appendChild(el('line',{x1:pad,y1:mid,x2:w-pad,y2:mid,stroke:'#8c959f'}));
  rows.forEach(function(r,i){
    const v=r.change||0, bh=(mid-pad)*Math.abs(v)/top;
    deltas.appendChild(el('rect',{x:pad+i*bw+2,y:v>=0?mid-bh:mid,width:Math.max(bw-4,1),
      height:bh,fill:v<0?'#cf222e':'#1a7f37','class':'delta-bar '+(v<0?'worse':'better'),
      'data-scorer':r.id,'data-value':v}));
    if(r.interval){
      const x=pad+i*bw+bw/2;
      deltas.appendChild(el('line',{x1:x,y1:y(r.interval[0]),x2:x,y2:y(r.interval[1]),
        stroke:'#24292f','stroke-width':2,'class':'interval','data-scorer':r.id,
        'data-low':r.interval[0],'data-high':r.interval[1]}));
    }
    deltas.appendChild(el('text',{x:pad+i*bw+bw/2,y:h-6,'font-size':10,'text-anchor':'middle'},
      r.id));
  });
  document.body.setAttribute('data-compare-rendered',
    String(document.querySelectorAll('rect.delta-bar').length));
}
})();
"""


def _fmt(value: float | None, digits: int = 3) -> str:
    return "–" if value is None else f"{value:.{digits}f}"


def _text(value: Any) -> str:
    """Any value of a results file as HTML text: whatever it holds, never markup."""
    return html.escape(str(value))


# In a script element, `</script>` ends it and `<!--` followed by `<script` changes how the
# rest is read (the charts' script never runs): JSON can spell `<`, `>` and `&` as escapes.
_SCRIPT_SAFE = str.maketrans({"<": "\\u003c", ">": "\\u003e", "&": "\\u0026"})


def _script_json(data: Any) -> str:
    """`data` as JSON that is inert inside an HTML script element, whatever its text holds."""
    return json.dumps(data).translate(_SCRIPT_SAFE)


def _clip(value: Any, limit: int = 300) -> str:
    text = value if isinstance(value, str) else json.dumps(value, default=str)
    return html.escape(text if len(text) <= limit else text[: limit - 1] + "…")


def _histogram(scores: list[float], scale: float) -> list[int]:
    counts = [0] * 10
    for score in scores:
        fraction = score / scale if scale else 0.0
        counts[min(9, max(0, int(fraction * 10)))] += 1
    return counts


def _summary_rows(summaries: dict[str, ScorerSummary]) -> str:
    rows = []
    for summary in summaries.values():
        p10, p50, p90 = summary.quantiles()
        cost = f"${summary.estimated_cost_usd:.4f}" if summary.has_cost else "–"
        cells = [
            html.escape(summary.scorer_id),
            str(summary.runs),
            _fmt(summary.mean),
            _fmt(p10),
            _fmt(p50),
            _fmt(p90),
            str(summary.failures),
            str(summary.judge_calls),
            str(summary.tokens),
            cost,
        ]
        rows.append(
            "<tr>"
            + "".join(f"<td{' class=num' if i else ''}>{cell}</td>" for i, cell in enumerate(cells))
            + "</tr>"
        )
    return "".join(rows)


def _signed(value: float | None, digits: int = 3) -> str:
    return "–" if value is None else f"{value:+.{digits}f}"


def _change_rows(changes: Sequence[ItemChange], limit: int) -> str:
    rows = []
    for change in changes[:limit]:
        after = (
            f"<span class=err>failed: {_clip(change.candidate_error)}</span>"
            if change.candidate_error is not None
            else _fmt(change.candidate)
        )
        css = "worse" if change.change is None or change.change < 0 else "better"
        rows.append(
            f"<tr class={css}><td>{html.escape(change.scorer_id)}</td>"
            f"<td class=num>{_text(change.item)}</td><td>{_clip(change.input)}</td>"
            f"<td class=num>{_fmt(change.baseline)}</td><td class=num>{after}</td></tr>"
        )
    more = len(changes) - limit
    if more > 0:
        rows.append(f"<tr><td colspan=5 class=muted>… and {more} more</td></tr>")
    return "".join(rows) or "<tr><td colspan=5 class=muted>none</td></tr>"


def _noise_section(noise: Mapping[str, ScorerNoise]) -> str:
    if not noise:
        return ""
    rows = "".join(
        f"<tr><td>{html.escape(scorer_id)}</td><td class=num>{n.items}</td>"
        f"<td class=num>{n.runs}</td><td class=num>{_fmt(n.mean)}</td>"
        f"<td class=num>{_fmt(n.within_item_sd)}</td><td class=num>{_fmt(n.between_item_sd)}</td>"
        "</tr>"
        for scorer_id, n in noise.items()
    )
    repeats = max(n.repeats for n in noise.values())
    return f"""<h2>Judge noise</h2>
<p class="muted">Each item was judged {repeats} times by each LLM-judged scorer. The judge's noise
is the spread of one item's judgements; the item spread is that of the items' means.</p>
<table id="noise"><thead><tr><th>scorer</th><th>items</th><th>runs</th><th>mean</th>
<th>judge noise (sd)</th><th>item spread (sd)</th></tr></thead><tbody>{rows}</tbody></table>"""


def _comparison_section(comparison: Comparison, limit: int) -> str:
    problems = comparison.problems()
    verdict = (
        f'<p class="verdict better" id="compare-verdict">No regression beyond '
        f"{comparison.max_drop:.1%} of a scorer's scale at {comparison.confidence:.0%} "
        "confidence.</p>"
        if not problems
        else '<p class="verdict worse" id="compare-verdict">'
        + "<br>".join(html.escape(p) for p in problems)
        + "</p>"
    )
    notes = [
        *(
            f"Scorer changed: {c.describe()} (compared as asked)."
            for c in comparison.changed_scorers
        ),
        *(f"Scorer version unknown for {s}: not checked." for s in comparison.unversioned),
        *comparison.within_noise(),
    ]
    if notes:
        verdict += (
            '<p class="muted" id="compare-notes">'
            + "<br>".join(html.escape(note) for note in notes)
            + "</p>"
        )
    rows = "".join(
        f"<tr class={'worse' if (d.change or 0) < 0 else 'better'}>"
        f"<td>{html.escape(d.scorer_id)}</td><td class=num>{_fmt(d.baseline_mean)}</td>"
        f"<td class=num>{_fmt(d.candidate_mean)}</td><td class=num>{_signed(d.delta)}</td>"
        f"<td class=num>{html.escape(interval_text(d))}</td>"
        f"<td class=num>{d.regressed}</td><td class=num>{d.improved}</td>"
        f"<td class=num>{d.newly_failed}</td></tr>"
        for d in comparison.scorers.values()
    )
    unmatched = ""
    if comparison.only_in_baseline or comparison.only_in_candidate:
        unmatched = (
            f'<p class="muted">{comparison.only_in_baseline} runs only in the baseline, '
            f"{comparison.only_in_candidate} only in this run (not compared).</p>"
        )
    head = "<tr><th>scorer</th><th>item</th><th>input</th><th>baseline</th><th>now</th></tr>"
    return f"""<h2>Compared with the baseline</h2>{verdict}{unmatched}
<table id="compare"><thead><tr><th>scorer</th><th>baseline mean</th><th>mean</th><th>delta</th>
<th>{comparison.confidence:.0%} interval</th><th>regressed</th><th>improved</th>
<th>newly failed</th></tr></thead><tbody>{rows}</tbody></table>
<div class="charts"><div class="chart"><h3>Change of the mean (share of the scale)</h3>
<svg id="deltas" width="360" height="200" role="img"></svg></div></div>
<h3>Regressed items</h3><table id="regressed"><thead>{head}</thead>
<tbody>{_change_rows(comparison.regressed, limit)}</tbody></table>
<h3>Improved items</h3><table id="improved"><thead>{head}</thead>
<tbody>{_change_rows(comparison.improved, limit)}</tbody></table>"""


def render_report(
    records: Sequence[dict[str, Any]],
    *,
    title: str = "scorewatch evaluation",
    scales: dict[str, float] | None = None,
    lowest: int = 10,
    comparison: Comparison | None = None,
    noise: Mapping[str, ScorerNoise] | None = None,
) -> str:
    """The report page for result records (the lines of an eval's `--out` file), with the
    comparison to a baseline run and the judge noise of repeated judgements when given."""
    summaries = summarize_records(records)
    scales = {
        **{str(r["scorer_id"]): float(r["scale"]) for r in records if r.get("scale")},
        **(scales or {}),
    }
    chart_data: dict[str, Any] = {
        "scorers": [
            {
                "id": s.scorer_id,
                "mean": s.mean,
                "scale": scales.get(s.scorer_id, 1.0),
                "histogram": _histogram(s.scores, scales.get(s.scorer_id, 1.0)),
            }
            for s in summaries.values()
        ]
    }
    compared = ""
    if comparison is not None:
        chart_data["comparison"] = [
            {"id": d.scorer_id, "change": d.change, "interval": d.change_interval}
            for d in comparison.scorers.values()
        ]
        chart_data["maxDrop"] = comparison.max_drop
        compared = _comparison_section(comparison, lowest)
    embedded = _script_json(chart_data)
    histograms = "".join(
        f'<div class="chart"><h3>{html.escape(s.scorer_id)}: score distribution</h3>'
        f'<svg id="hist-{i}" width="360" height="200" role="img"></svg></div>'
        for i, s in enumerate(summaries.values())
    )
    scored = [r for r in records if r.get("error") is None and r.get("score") is not None]
    low_rows = "".join(
        f"<tr><td>{_text(r['scorer_id'])}</td><td class=num>{_text(r['item'])}</td>"
        f"<td class=num>{_fmt(r['score'])}</td><td>{_clip(r.get('reason') or '')}</td>"
        f"<td>{_clip(r.get('output'))}</td></tr>"
        for r in sorted(scored, key=lambda r: float(r["score"]))[:lowest]
    )
    failures = [r for r in records if r.get("error")]
    failure_rows = "".join(
        f"<tr><td>{_text(r['scorer_id'])}</td><td class=num>{_text(r['item'])}</td>"
        f"<td>{_text(r.get('failed_step') or '–')}</td>"
        f"<td>{_text(r.get('error_code') or '–')}</td>"
        f"<td class=err>{_clip(r['error'])}</td></tr>"
        for r in failures
    )
    total_items = len({r.get("item") for r in records})
    return f"""<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>{html.escape(title)}</title>
<style>{_STYLE}</style></head><body>
<h1>{html.escape(title)}</h1>
<p class="muted">{total_items} items, {len(records)} scorer runs, {len(failures)} failed.</p>
{compared}
{_noise_section(noise or {})}
<h2>Scorers</h2>
<table><thead><tr><th>scorer</th><th>runs</th><th>mean</th><th>p10</th><th>p50</th><th>p90</th>
<th>failures</th><th>judge calls</th><th>tokens</th><th>estimated cost</th></tr></thead>
<tbody>{_summary_rows(summaries)}</tbody></table>
<h2>Charts</h2>
<div class="charts"><div class="chart"><h3>Mean score per scorer</h3>
<svg id="means" width="360" height="200" role="img"></svg></div>{histograms}</div>
<h2>Lowest-scoring items</h2>
<table><thead><tr><th>scorer</th><th>item</th><th>score</th><th>reason</th><th>output</th></tr>
</thead><tbody>{low_rows or "<tr><td colspan=5 class=muted>none</td></tr>"}</tbody></table>
<h2>Failures</h2>
<table><thead><tr><th>scorer</th><th>item</th><th>failed step</th><th>code</th><th>error</th></tr>
</thead><tbody>{failure_rows or "<tr><td colspan=5 class=muted>none</td></tr>"}</tbody></table>
<script type="application/json" id="report-data">{embedded}</script>
<script>{_SCRIPT}</script>
</body></html>
"""
