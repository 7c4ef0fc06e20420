"""The `wikiqa` command line.

Exit codes: 0 success, 1 not found or bad input, 2 usage error, 3 Wikipedia unavailable.

One module per command group: `wiki` (search, article), `snapshot` (info, record), `ask` (ask,
serve), `evals` (eval, check), `suite` (suite import, suite build), `validate`, `compare` (compare, power), `experiment`
(experiment run), `local` (local-model serve);
`common` holds what they share and `main` wires them into one parser.
"""

from __future__ import annotations

from wikiqa.cli.main import build_parser, main

__all__ = ["build_parser", "main"]
