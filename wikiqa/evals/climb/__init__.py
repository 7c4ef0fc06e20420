"""The climb's record: the change log, one row per recorded run."""

from wikiqa.evals.climb.changelog import read, record_run, render_markdown

__all__ = ["read", "record_run", "render_markdown"]
