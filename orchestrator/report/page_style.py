"""The results page's looks and limits: its content security policy (nothing fetched) and
its one inline style sheet, apart from the sections `html.py` renders."""

from __future__ import annotations

from orchestrator.report.plots import FONT

# No fetch of any kind: scripts and styles only inline, images only from data: or blob: URLs
# (plotly's "download as PNG" makes one).
CSP = ("default-src 'none'; script-src 'unsafe-inline'; style-src 'unsafe-inline'; "
       "img-src data: blob:; base-uri 'none'; form-action 'none'")
STYLE = """
:root { color-scheme: light; }
body { font-family: FONT; margin: 0; color: #1b1b1b; background: #fff; line-height: 1.45; }
main { max-width: 1200px; margin: 0 auto; padding: 1rem 1.5rem 4rem; }
h1 { font-size: 1.6rem; margin-top: 0.5rem; }
h2 { font-size: 1.3rem; margin-top: 2.2rem; border-bottom: 1px solid #ddd; }
h3 { font-size: 1.05rem; margin-top: 1.4rem; }
pre { background: #f6f6f6; padding: 0.6rem 0.8rem; font-size: 0.85rem;
      white-space: pre-wrap; overflow-wrap: anywhere; }
h1, p, dd, summary, figcaption { overflow-wrap: anywhere; }
code { font-size: 0.9em; }
nav ol { columns: 3; font-size: 0.95rem; }
.table-wrap { overflow-x: auto; margin: 0.6rem 0; }
table { border-collapse: collapse; font-size: 0.88rem; }
th, td { border: 1px solid #d4d4d4; padding: 0.2rem 0.5rem; text-align: left;
         vertical-align: top; }
th { background: #f0f0f0; }
td.num, th.num { text-align: right; font-variant-numeric: tabular-nums; white-space: nowrap; }
tbody tr:nth-child(even) { background: #fafafa; }
figure { margin: 1.2rem 0 2rem; }
figure h3 { margin-bottom: 0.2rem; }
.plot { width: 100%; }
figcaption { font-size: 0.9rem; color: #444; max-width: 60rem; }
details { margin: 0.4rem 0; }
summary { cursor: pointer; }
dt { font-weight: 600; margin-top: 0.5rem; }
dd { margin-left: 1.5rem; }
@media (max-width: 700px) {
  main { padding: 0.5rem 0.7rem 3rem; }
  nav ol { columns: 1; }
  h1 { font-size: 1.3rem; }
}
""".replace("FONT", FONT)
