from wikiqa.cli import main

raise SystemExit(main())
