from wikiqa.bench import main

raise SystemExit(main())
