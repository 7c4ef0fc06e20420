"""`python -m wikiqa.bench`: runs the command line in `wikiqa.bench.main`."""

from wikiqa.bench.main import main

raise SystemExit(main())
