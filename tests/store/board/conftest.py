"""The board's contract tests run on both engines, as the mailboxes' do: every test
that takes ``db``, ``writer`` or ``board`` runs once on a SQLite file and once on a
fresh PostgreSQL database (the ``engine`` fixture of ``tests/store``). Tests about
TermAl's file itself take ``db_path`` (or say ``@sqlite_only``) and run on SQLite."""
