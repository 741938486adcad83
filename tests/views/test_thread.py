"""The headless thread model and TermAl's presentation rules (no screen involved)."""

from __future__ import annotations

import pytest

from termal_tui.core.models import MailboxMessage, MailboxParticipant, MailboxSummary
from termal_tui.views.presentation import first_sentence, row_title
from termal_tui.views.thread import Gap, StartMarker, ThreadModel, item_key


def message(
    sequence: int, target: str = "session-codex", topic: str | None = None
) -> MailboxMessage:
    return MailboxMessage(
        id=f"message-{sequence}",
        mailbox_id="mailbox-1",
        sequence=sequence,
        sender_session_id="session-fable" if target == "session-codex" else "session-codex",
        sender_name="Termal::Fable",
        target_session_id=target,
        target_name="Termal::Codex",
        created_at="2026-07-30T12:00:00Z",
        topic=topic,
        body=f"Message {sequence}. More detail.",
        notification_state="deliveredToIdleSession",
    )


def summary(latest: int, **cursors: int) -> MailboxSummary:
    return MailboxSummary(
        id="mailbox-1",
        participants=[
            MailboxParticipant(session_id=f"session-{name}", display_name=name, processed_through=c)
            for name, c in cursors.items()
        ],
        latest_sequence=latest,
        unread_count=0,
    )


def newest_first(high: int, low: int) -> list[MailboxMessage]:
    return [message(n) for n in range(high, low - 1, -1)]


def keys(model: ThreadModel) -> list[str]:
    return [item_key(item) for item in model.items]


# ------------------------------------------------ TermAl's own test cases (ui/src)


def test_first_sentence_is_termals():
    assert first_sentence("  First   sentence. Second sentence. ") == "First sentence."
    assert first_sentence("No punctuation") == "No punctuation"
    # All whitespace collapses first: a blank line does not end the sentence.
    assert first_sentence("line one\n\n  line two") == "line one line two"
    assert first_sentence("v1.2 ships? Yes.") == "v1.2 ships?"
    assert first_sentence(None) == "" and first_sentence(" \n ") == ""


def test_title_is_topic_trimmed_else_first_sentence_else_message_n():
    assert row_title(message(3, topic="  review  ")) == "review"
    assert row_title(message(3, topic="   ")) == "Message 3."
    empty = message(4).replace(body=" ")
    assert row_title(empty) == "Message #4"


def test_processed_follows_the_target_cursor():
    model = ThreadModel()
    model.load_first(summary(10, codex=8), [message(8), message(9)], False)
    assert model.is_processed(message(8)) and not model.is_processed(message(9))


def test_divider_goes_immediately_before_processed_rows():
    model = ThreadModel()
    model.load_first(summary(10, codex=8), [message(n) for n in (10, 9, 8, 7)], True)
    dividers = model.dividers()
    assert list(dividers) == ["message-8"]  # index 2 in TermAl's test
    assert keys(model).index("message-8") == 2


# ------------------------------------------------------------- paging and pending


def test_older_pages_append_and_the_start_marker_closes_the_thread():
    model = ThreadModel()
    change = model.load_first(summary(150), newest_first(150, 101), True)
    assert change.splices[0].index == 0 and len(change.splices[0].items) == 50
    change = model.add_older(newest_first(100, 51), True)
    assert change.splices[0].index == 50 and change.splices[0].count == 0
    change = model.add_older([*newest_first(50, 1), message(60)], False)  # a duplicate
    assert isinstance(model.items[-1], StartMarker) and model.loaded == 150
    assert [m.sequence for m in model.items[:-1]] == list(range(150, 0, -1))


def test_the_first_page_read_again_replaces_the_rows_and_keeps_counting_them():
    """A first page read twice (a start-up race, a reopened file) brings new objects
    with the same ids: they replace the rows, and ``loaded`` still counts them (it fell
    to 0, and the header said ``0 of latest``)."""
    model = ThreadModel()
    model.load_first(summary(150), newest_first(150, 101), True)
    model.toggle("message-150")
    change = model.load_first(summary(150), newest_first(150, 101), True)
    assert model.loaded == 50 and change.splices[0].count == 50
    assert all(model.by_id[m.id] is m for m in model.items if isinstance(m, MailboxMessage))
    assert model.toggle("message-149").changed == {"message-149"}  # rows still answer
    # The same holds for a window placed over rows already loaded.
    model.place_window(newest_first(130, 110), True, True)
    assert model.loaded == len([m for m in model.items if isinstance(m, MailboxMessage)])


def test_new_rows_wait_as_pending_and_come_in_at_the_top():
    model = ThreadModel()
    model.load_first(summary(5), newest_first(5, 1), False)
    model.add_newer([message(6), message(7)], more=False)
    assert [m.sequence for m in model.pending] == [7, 6] and model.newest_sequence == 7
    change = model.show_pending()
    assert change.splices[0].index == 0 and [m.sequence for m in change.splices[0].items] == [7, 6]
    assert not model.pending and keys(model)[0] == "message-7"


def test_a_cursor_move_changes_only_the_rows_it_crosses():
    model = ThreadModel()
    model.load_first(summary(100, codex=40, fable=100), newest_first(100, 1), False)
    change = model.update_summary(summary(100, codex=45, fable=100))
    assert not change.splices
    moved = {"message-41", "message-42", "message-43", "message-44", "message-45"}
    # The rows whose processed state flipped, and the two rows the divider left/reached.
    assert moved <= change.changed and change.changed <= moved | {"message-40"}


def test_latest_is_never_below_a_cursor_or_a_loaded_row():
    model = ThreadModel()
    model.load_first(summary(1, codex=0, child=2), [message(2), message(1)], False)
    assert model.latest_sequence == 2


# -------------------------------------------------------------------- jumps, gaps


def test_a_deep_jump_places_a_window_below_a_gap_and_the_gap_fills_from_its_top():
    model = ThreadModel()
    model.load_first(summary(200_000), newest_first(200_000, 199_951), True)
    window = newest_first(50_025, 49_975)
    change = model.place_window(window, has_older=True, newer_exist=True)
    splice = change.splices[0]
    assert splice.index == 50 and isinstance(splice.items[0], Gap)
    gap = splice.items[0]
    assert (gap.newer, gap.older, gap.at_most) == (199_951, 50_025, 149_925)
    assert model.index_of_sequence(50_000) == 50 + 1 + 25
    change = model.fill_gap(gap, newest_first(199_950, 199_901), complete=False)
    assert change.splices[0].index == 50 and change.splices[0].count == 1
    rest = change.splices[0].items[-1]
    assert isinstance(rest, Gap) and (rest.newer, rest.older) == (199_901, 50_025)
    change = model.fill_gap(rest, newest_first(199_900, 50_026), complete=True)
    assert not any(isinstance(i, Gap) for i in model.items)
    sequences = [i.sequence for i in model.items]
    assert sequences == sorted(sequences, reverse=True) and len(set(sequences)) == len(sequences)


def test_a_jump_inside_a_gap_splits_it():
    model = ThreadModel()
    model.load_first(summary(1000), newest_first(1000, 951), True)
    model.place_window(newest_first(125, 75), has_older=True, newer_exist=True)
    change = model.place_window(newest_first(525, 475), has_older=True, newer_exist=True)
    gaps = [i for i in model.items if isinstance(i, Gap)]
    assert [(g.newer, g.older) for g in gaps] == [(951, 525), (475, 125)]
    assert change.splices[0].count == 1  # the old gap replaced in place


def test_a_cursor_inside_a_gap_marks_the_gap():
    model = ThreadModel()
    model.load_first(summary(1000, codex=500), newest_first(1000, 951), True)
    model.place_window(newest_first(125, 75), has_older=True, newer_exist=True)
    (key,) = model.dividers()
    assert key.startswith("gap-")


@pytest.mark.parametrize("expanded", [True, False])
def test_toggle_changes_one_row(expanded):
    model = ThreadModel()
    model.load_first(summary(3), newest_first(3, 1), False)
    if expanded:
        model.toggle("message-2")
    change = model.toggle("message-2")
    assert change.changed == {"message-2"} and ("message-2" in model.expanded) is not expanded


def test_a_cursor_inside_a_gap_splits_the_gap_row_where_it_stands():
    """#999,651, the divider, then "999,600 rows not loaded" put the divider above
    rows #900,001–#999,650 it is not above: it is drawn between them and the rest."""
    from termal_tui.views.thread import gap_parts

    model = ThreadModel()
    latest = 999_700
    model.load_first(summary(latest, planner=900_000), newest_first(latest, 999_651), True)
    model.place_window(newest_first(50, 1), has_older=False, newer_exist=True)
    (key,) = model.dividers()
    index = model.index_of(key)
    assert index is not None
    gap = model.items[index]
    assert isinstance(gap, Gap) and (gap.newer, gap.older) == (999_651, 50)
    parts = gap_parts(gap, model.dividers()[key])
    assert [(p.newer, p.older) if isinstance(p, Gap) else p.processed_through for p in parts] == [
        (999_651, 900_000),
        900_000,
        (900_001, 50),
    ]
    assert [p.at_most for p in parts if isinstance(p, Gap)] == [99_650, 899_950]


def test_gap_parts_orders_cursors_and_drops_empty_runs():
    from termal_tui.views.thread import gap_parts

    a = MailboxParticipant(session_id="a", display_name="a", processed_through=100)
    b = MailboxParticipant(session_id="b", display_name="b", processed_through=199)
    c = MailboxParticipant(session_id="c", display_name="c", processed_through=150)
    parts = gap_parts(Gap(200, 10), [a, b, c])
    assert [(p.newer, p.older) if isinstance(p, Gap) else p.session_id for p in parts] == [
        "b",
        (200, 150),
        "c",
        (151, 100),
        "a",
        (101, 10),
    ]


def test_a_gap_row_draws_the_divider_between_its_rows():
    from termal_tui.tui.render import gap_row

    planner = MailboxParticipant(
        session_id="planner", display_name="planner", processed_through=900_000
    )
    lines = gap_row(Gap(999_651, 50), [planner]).plain.splitlines()
    assert lines == [
        "  … up to 99,650 rows not loaded (#900,001–#999,650) — enter to load",
        "──── planner has processed to here (#900,000) ────",
        "  … up to 899,950 rows not loaded (#51–#900,000)",
    ]
