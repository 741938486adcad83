"""termal-tui: a read-only viewer and a faithful Python store for TermAl agent mailboxes."""

__version__ = "0.1.0"
