from io_tui.cli import main

raise SystemExit(main())
