from sq.cli import main

raise SystemExit(main())
