"""The session registry's file (``termal-tui-sessions.sqlite``, beside the coordination
database): every SQL statement it runs, by job. The statements are written once in the
SQL both engines speak (``dbapi``): on a ``postgresql://`` database the same ones run on
the registry's tables there (``store/postgres/registry.py``).

* ``schema``: its tables and version, opened and migrated once (``database``).
* ``sessions``: names and ids, turns.
* ``wakes``: wake marks, re-offers, hook runs, and the channel listeners (who takes a
  session's wake-ups, and since when).
* ``tokens``: the hub's bearer tokens, stored as SHA-256 hashes.
* ``projects``: board scopes minted here, and TermAl's own project list (read once, here).

``agents/registry.py`` is the API the rest of the code uses; it calls these. The viewer's
read of who is listening (``notifiers.py``) uses ``wakes.read_notifier_rows`` (read-only).
"""
