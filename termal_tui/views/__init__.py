"""Headless models of what each screen shows, fed by one live source (``live.py``).

No textual or rich here: widgets and screens render these models and own only their keys.
"""
