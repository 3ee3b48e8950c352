"""The HTML report: a self-contained page a person acts on."""

from constructs_lib.audit.report.html.page import render_html

__all__ = ["render_html"]
