"""Pure rules and records: no I/O, no project imports beyond core."""
