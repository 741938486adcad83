"""The coordination board on PostgreSQL: ``open_board_writer(url)`` and
``open_board_reader(url)`` (``termal_tui.store.board``) route here. The rules, records
and sentences are the SQLite board's (``store/board/rules.py``, ``formats.py``,
``records.py``): only the SQL and the locking are this engine's."""
