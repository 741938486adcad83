"""The Textual viewer. Reads only through ``termal_tui.store.reader``."""
