"""The bisect's result and its report: the first bad revision with its subject, diff stat and diagnosis,
every tried revision's figure with its interval, every change on the way; Markdown and one HTML page.

Exit codes: 0 the first bad revision is found, 1 the range holds no such change (bad is not
slower than good beyond the noise and the threshold, or the change could not be pinned to one
revision: only skipped or undecided ones are left, or the good or bad revision's runs fell in
two clusters), 2 bad input.
"""
from __future__ import annotations

from dataclasses import dataclass

import math

import numpy as np

from inproc.bisect import search
from inproc.bisect.oracle import INSUFFICIENT, regressed
from inproc.bisect.session import Levels, Sitting, good_around
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
    figures: str = ""  # each run's tok/s in order, "*" marking a run off its revision's level


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
    good_level: str = ""  # the good revision's level and spread: the band a run of the same build lies in


def _figures(s: Sitting, lv: Levels, i: int) -> str:
    return " ".join(f"{s.samples[p].tok_s:.1f}" + ("*" if p in lv.off else "~" if p in lv.beside else "")
                    for p in s.positions(i))


def _rows(s: Sitting, lv: Levels) -> tuple[Row, ...]:
    out = []
    for i in sorted(set(s.verdicts) | {line.index for line in s.lines}):
        v = s.verdicts.get(i)
        out.append(Row(i, s.targets.label(i), s.targets.subject(i), v.verdict if v else "—", len(s.runs_of(i)),
                       v.ratio if v else None, v.low if v else None, v.high if v else None, v.note if v else "",
                       _figures(s, lv, i)))
    return tuple(out)


def good_level(s: Sitting, lv: Levels) -> str:
    """The good revision's level (the geometric mean of its runs on its level) and the spread in use, as a band."""
    kept = [s.samples[p].tok_s for p in s.positions(0) if p not in lv.off]
    if not kept or lv.spread is None:
        return f"{s.good_varied()}; no spread yet"
    level, sd = float(np.exp(np.mean(np.log(kept)))), lv.spread.sigma
    return (f"the good revision's level {level:.1f} tok/s ({len(kept)} of its {len(s.positions(0))} runs on it), "
            f"spread {sd * 100:.1f} % of a run ({lv.spread.source}): a run of the same build lies within "
            f"{level * math.exp(-2 * sd):.1f}–{level * math.exp(2 * sd):.1f} tok/s (±2σ) 95 % of the time")


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
    children = sum(1 for line in s.lines if line.results or line.tok_s is not None)
    child_s = sum(line.wall_s for line in s.lines)
    lv = s.levels()
    rows, level = _rows(s, lv), good_level(s, lv)
    if ref is None or not regressed(ref):
        why = ref.reason if ref else "not measured"
        head = f"{why[0].upper()}{why[1:]}." if ref and ref.verdict == INSUFFICIENT else \
            f"No regression to bisect: bad against good is {why}."
        return Result(title, head, NONE, "", None, "", "", (), (), rows, children, child_s, level)
    good = [r.anatomy for r in s.runs_of(0) if r.anatomy]
    bad = [r.anatomy for r in s.runs_of(s.last) if r.anatomy]
    regression = (f"bad against good: tok/s {ref.change.ratio_text}, {ref.reason}; spread {ref.change.spread.source}; "
                  f"in the steps: "
                  f"{diagnose(good, bad, 'tok_s', ref.change.ratio)}")
    if why := s.clusters():  # whatever was called before they showed: no call stands on such a machine
        return Result(title, f"Insufficient data: {why}.", NONE, regression, None, "", "", (), _changes(s), rows,
                      children, child_s, level)
    found, could_be = search.first_bad({k: v.verdict for k, v in s.verdicts.items()}, s.last)
    if found is None:
        names = tuple(f"{s.targets.label(i)} {s.targets.subject(i)}" for i in could_be)
        insufficient = any(v.verdict == INSUFFICIENT for v in s.verdicts.values())
        return Result(title, f"Not pinned to one revision: the first bad one is one of {len(names)} "
                      "(skipped or undecided between them)" + (f"; insufficient data: {s.good_varied()}" if insufficient
                                                               else "") + ".",
                      NONE, regression, None, "", "", names, _changes(s), rows, children, child_s, level)
    row = next(r for r in rows if r.index == found)
    cand = [r.anatomy for r in s.runs_of(found) if r.anatomy]
    around = [r.anatomy for r in good_around(s, found) if r.anatomy] or good
    diag = diagnose(around, cand, "tok_s", row.ratio) if row.ratio else diagnose(good, bad, "tok_s", ref.change.ratio)
    return Result(title, f"First bad revision: {row.label} {row.subject}", FOUND, regression, row,
                  s.targets.details(found), diag, (), _changes(s), rows, children, child_s, level)


def _figure(r: Row) -> str:
    return f"{r.ratio:.3f}x ({r.low:.3f}–{r.high:.3f})" if r.ratio is not None else "—"


def render_markdown(r: Result) -> str:
    lines = [f"# {r.title}", "", f"**{r.headline}**", ""]
    if r.regression:
        lines += [f"- The regression: {r.regression}", ""]
    if r.first_bad is not None:
        lines += [f"- Against the good revision's level: {r.first_bad.note}",
                  f"- What changed in the steps: {r.diagnosis}", "", "```", r.stat or "(no files changed)", "```", ""]
    lines += [f"- could be: {c}" for c in r.candidates]
    if r.changes:
        lines += ["## Changes on the way", ""] + [f"- {c}" for c in r.changes] + [""]
    lines += ["## Tried revisions", "", f"Beside each revision's runs: {r.good_level}. A run marked * is off its "
              "revision's level (the machine moved during it), ~ was measured beside a good run that is: no call uses either.",
              "",
              "| # | revision | subject | verdict | runs (tok/s) | tok/s vs good (interval) | why |",
              "|---|---|---|---|---|---|---|"]
    lines += [f"| {x.index} | {x.label} | {x.subject.replace('|', '/')} | {x.verdict} | {x.figures} | {_figure(x)} | "
              f"{x.note.replace('|', '/')} |" for x in r.rows]
    lines += ["", f"{r.children} child runs, {r.child_s:.0f} s in them."]
    return "\n".join(lines) + "\n"


def render_html(r: Result) -> str:
    body = [f"<h1>{t(r.title)}</h1>", f"<div class=\"{'warn' if r.exit_code == FOUND else 'sub'}\">{t(r.headline)}</div>"]
    if r.regression:
        body.append(f"<p>{t('The regression: ' + r.regression)}</p>")
    if r.first_bad is not None:
        against = "Against the good revision's level: " + r.first_bad.note
        body += [f"<p>{t(against)}</p>",
                 f"<p>{t('What changed in the steps: ' + r.diagnosis)}</p>", f"<pre>{t(r.stat)}</pre>"]
    if r.candidates:
        body.append("<ul>" + "".join(f"<li>{t(c)}</li>" for c in r.candidates) + "</ul>")
    if r.changes:
        body.append("<h2>Changes on the way</h2><ul>" + "".join(f"<li>{t(c)}</li>" for c in r.changes) + "</ul>")
    rows = "".join(f"<tr><td>{x.index}</td><td class=\"l\">{t(x.label)}</td><td class=\"l\">{t(x.subject)}</td>"
                   f"<td class=\"l\">{t(x.verdict)}</td><td>{t(x.figures)}</td><td>{t(_figure(x))}</td>"
                   f"<td class=\"l\">{t(x.note)}</td></tr>" for x in r.rows)
    body.append(f"<h2>Tried revisions</h2><p>{t('Beside each revision' + chr(39) + 's runs: ' + r.good_level)}. A run "
                "marked * is off its revision's level (the machine moved during it), ~ was measured beside a good run "
                "that is: no call uses either.</p>"
                "<table><tr><th>#</th><th class=\"l\">Revision</th><th class=\"l\">Subject</th>"
                "<th class=\"l\">Verdict</th><th>Runs (tok/s)</th><th>tok/s vs good</th><th class=\"l\">Why</th></tr>"
                f"{rows}</table>")
    body.append(f"<p class=\"sub\">{r.children} child runs, {r.child_s:.0f} s in them.</p>")
    return ("<!doctype html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">"
            f"<title>{t(r.title)}</title><style>{CSS}</style></head><body>\n" + "\n".join(body) + "\n</body></html>\n")
