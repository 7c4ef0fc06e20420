"""Human labels: graders validated against them, the confidence fit, and undecided answers
resolved at the rates humans gave."""

from wikiqa.evals.labels.validation import LabelError, LabelledExample, load_labels

__all__ = ["LabelError", "LabelledExample", "load_labels"]
