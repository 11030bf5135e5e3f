from xdptui.cli import main

raise SystemExit(main())
