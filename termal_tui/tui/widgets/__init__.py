"""Viewer widgets: the mailbox index and the mailbox tab."""
