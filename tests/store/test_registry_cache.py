"""The identity cache a hub on PostgreSQL keeps of the registry: trusted only while it
hears every change, never for an answer read across a change, and never for longer than
its maximum age, however quiet the channel (a listener that is never told)."""

from __future__ import annotations

from termal_tui.store.registry.cache import BY_TOKEN, MISSING, IdentityCache
from tests.helpers import DrivenClock


def test_an_answer_is_kept_while_live_and_forgotten_on_any_change():
    cache = IdentityCache(clock=DrivenClock())
    assert cache.get(BY_TOKEN, "h") is MISSING  # not live yet: nothing is kept
    cache.reset(live=True)
    cache.put(BY_TOKEN, "h", "session-1", cache.generation())
    assert cache.get(BY_TOKEN, "h") == "session-1"
    cache.reset(live=True)  # a change was announced
    assert cache.get(BY_TOKEN, "h") is MISSING


def test_an_answer_read_across_a_change_is_not_kept():
    cache = IdentityCache(clock=DrivenClock())
    cache.reset(live=True)
    before = cache.generation()
    cache.reset(live=True)  # the revocation's notification, while the read ran
    cache.put(BY_TOKEN, "h", "session-1", before)
    assert cache.get(BY_TOKEN, "h") is MISSING


def test_no_answer_outlives_its_maximum_age_even_on_a_silent_channel():
    clock = DrivenClock()
    cache = IdentityCache(max_age=10.0, clock=clock)
    cache.reset(live=True)
    cache.put(BY_TOKEN, "h", "session-1", cache.generation())
    clock.advance(10.0)
    assert cache.get(BY_TOKEN, "h") == "session-1"
    clock.advance(0.1)  # nothing was heard, yet it is read again
    assert cache.get(BY_TOKEN, "h") is MISSING
