"""Modal screens: help and the full-body view."""
