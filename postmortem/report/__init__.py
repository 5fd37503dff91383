"""Renderers: terminal (rich), JSON, Markdown and self-contained HTML (jinja2)."""
