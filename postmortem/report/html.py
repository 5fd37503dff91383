"""One self-contained HTML file (jinja2, autoescaped): no external request of any kind."""
from __future__ import annotations

from postmortem.model import Analysis
from postmortem.report.jsonout import to_dict


def render(a: Analysis) -> str:
    from jinja2 import Environment, PackageLoader, select_autoescape

    env = Environment(loader=PackageLoader("postmortem.report", "templates"),
                      autoescape=select_autoescape(default=True, default_for_string=True))
    return env.get_template("report.html.j2").render(r=to_dict(a), a=a)
