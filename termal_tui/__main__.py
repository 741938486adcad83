"""``python -m termal_tui``."""

from termal_tui.cli import main

raise SystemExit(main())
