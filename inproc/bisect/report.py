"""The bisect's result and its report: the first bad revision with its subject, diff stat and diagnosis,
every tried revision's figure with its interval, every change on the way; Markdown and one HTML page.

Exit codes: 0 the first bad revision is found, 1 the range holds no such change (bad is not
slower than good beyond the noise and the threshold, or the change could not be pinned to one
revision: only skipped or undecided ones are left), 2 bad input.
"""
from __future__ import annotations

from dataclasses import dataclass

from inproc.bisect import search
from inproc.bisect.oracle import regressed
from inproc.bisect.session import Sitting, good_around
from inproc.history.diagnose import diagnose
from inproc.render.html import CSS
from inproc.render.svg import t

FOUND, NONE = 0, 1


@dataclass(frozen=True)
class Row:
    """One tried target: its verdict and figure against the good revision."""

    index: int
    label: str
    subject: str
    verdict: str
    runs: int
    ratio: float | None
    low: float | None
    high: float | None
    note: str


@dataclass(frozen=True)
class Result:
    title: str
    headline: str
    exit_code: int
    regression: str  # bad against good, with the diagnosis ("" when there is none)
    first_bad: Row | None
    stat: str  # its git show --stat
    diagnosis: str
    candidates: tuple[str, ...]  # when not pinned down: the revisions it could be
    changes: tuple[str, ...]  # every change between decided revisions, in order
    rows: tuple[Row, ...]
    children: int
    child_s: float


def _rows(s: Sitting) -> tuple[Row, ...]:
    out = []
    for i in sorted(s.verdicts):
        v = s.verdicts[i]
        out.append(Row(i, s.targets.label(i), s.targets.subject(i), v.verdict, len(s.runs_of(i)), v.ratio, v.low,
                       v.high, v.note))
    return tuple(out)


def _changes(s: Sitting) -> tuple[str, ...]:
    verdicts = {k: v.verdict for k, v in s.verdicts.items()}
    label = s.targets.label
    out = [f"{label(x.before)} ({x.was}) → {label(x.after)} ({x.now}): a change in {x.after - x.before} "
           f"revision{'s' if x.after - x.before > 1 else ''}" for x in search.transitions(verdicts)]
    if not search.monotonic(verdicts):
        out.append("not monotonic: a good revision follows a bad one; the bisect followed the last change to bad")
    return tuple(out)


def result(s: Sitting) -> Result:
    title = f"inproc bisect · cell {s.spec.key} · {s.targets.label(0)}..{s.targets.label(s.last)}"
    ref = s.ref
    children = sum(1 for line in s.lines if line.results)
    child_s = sum(line.wall_s for line in s.lines)
    rows = _rows(s)
    if ref is None or not regressed(ref):
        why = ref.reason if ref else "not measured"
        return Result(title, f"No regression to bisect: bad against good is {why}.", NONE, "", None, "", "", (),
                      (), rows, children, child_s)
    good = [r.anatomy for r in s.runs_of(0) if r.anatomy]
    bad = [r.anatomy for r in s.runs_of(s.last) if r.anatomy]
    regression = (f"bad against good: tok/s {ref.change.ratio:.3f}x ({ref.change.interval.low:.3f}–"
                  f"{ref.change.interval.high:.3f}), {ref.reason}; spread {ref.change.spread_source}; in the steps: "
                  f"{diagnose(good, bad, 'tok_s', ref.change.ratio)}")
    found, could_be = search.first_bad({k: v.verdict for k, v in s.verdicts.items()}, s.last)
    if found is None:
        names = tuple(f"{s.targets.label(i)} {s.targets.subject(i)}" for i in could_be)
        return Result(title, f"Not pinned to one revision: the first bad one is one of {len(names)} "
                      "(skipped or undecided between them).", NONE, regression, None, "", "", names, _changes(s),
                      rows, children, child_s)
    row = next(r for r in rows if r.index == found)
    cand = [r.anatomy for r in s.runs_of(found) if r.anatomy]
    around = [r.anatomy for r in good_around(s, found) if r.anatomy] or good
    diag = diagnose(around, cand, "tok_s", row.ratio) if row.ratio else diagnose(good, bad, "tok_s", ref.change.ratio)
    return Result(title, f"First bad revision: {row.label} {row.subject}", FOUND, regression, row,
                  s.targets.details(found), diag, (), _changes(s), rows, children, child_s)


def _figure(r: Row) -> str:
    return f"{r.ratio:.3f}x ({r.low:.3f}–{r.high:.3f})" if r.ratio is not None else "—"


def render_markdown(r: Result) -> str:
    lines = [f"# {r.title}", "", f"**{r.headline}**", ""]
    if r.regression:
        lines += [f"- The regression: {r.regression}", ""]
    if r.first_bad is not None:
        lines += [f"- Against the good runs around it: {r.first_bad.note}",
                  f"- What changed in the steps: {r.diagnosis}", "", "```", r.stat or "(no files changed)", "```", ""]
    lines += [f"- could be: {c}" for c in r.candidates]
    if r.changes:
        lines += ["## Changes on the way", ""] + [f"- {c}" for c in r.changes] + [""]
    lines += ["## Tried revisions", "", "| # | revision | subject | verdict | runs | tok/s vs good (interval) | why |",
              "|---|---|---|---|---|---|---|"]
    lines += [f"| {x.index} | {x.label} | {x.subject.replace('|', '/')} | {x.verdict} | {x.runs} | {_figure(x)} | "
              f"{x.note.replace('|', '/')} |" for x in r.rows]
    lines += ["", f"{r.children} child runs, {r.child_s:.0f} s in them."]
    return "\n".join(lines) + "\n"


def render_html(r: Result) -> str:
    body = [f"<h1>{t(r.title)}</h1>", f"<div class=\"{'warn' if r.exit_code == FOUND else 'sub'}\">{t(r.headline)}</div>"]
    if r.regression:
        body.append(f"<p>{t('The regression: ' + r.regression)}</p>")
    if r.first_bad is not None:
        body += [f"<p>{t('Against the good runs around it: ' + r.first_bad.note)}</p>",
                 f"<p>{t('What changed in the steps: ' + r.diagnosis)}</p>", f"<pre>{t(r.stat)}</pre>"]
    if r.candidates:
        body.append("<ul>" + "".join(f"<li>{t(c)}</li>" for c in r.candidates) + "</ul>")
    if r.changes:
        body.append("<h2>Changes on the way</h2><ul>" + "".join(f"<li>{t(c)}</li>" for c in r.changes) + "</ul>")
    rows = "".join(f"<tr><td>{x.index}</td><td class=\"l\">{t(x.label)}</td><td class=\"l\">{t(x.subject)}</td>"
                   f"<td class=\"l\">{t(x.verdict)}</td><td>{x.runs}</td><td>{t(_figure(x))}</td>"
                   f"<td class=\"l\">{t(x.note)}</td></tr>" for x in r.rows)
    body.append("<h2>Tried revisions</h2><table><tr><th>#</th><th class=\"l\">Revision</th><th class=\"l\">Subject</th>"
                "<th class=\"l\">Verdict</th><th>Runs</th><th>tok/s vs good</th><th class=\"l\">Why</th></tr>"
                f"{rows}</table>")
    body.append(f"<p class=\"sub\">{r.children} child runs, {r.child_s:.0f} s in them.</p>")
    return ("<!doctype html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">"
            f"<title>{t(r.title)}</title><style>{CSS}</style></head><body>\n" + "\n".join(body) + "\n</body></html>\n")
