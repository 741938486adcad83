"""The health view's headless model: counts and the listed findings, the status line in
each state (checking, Live, Paused, Stale with the last good time, the file not there
yet), where the highlight goes, and the spacing after a slow pass, on a driven clock."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from termal_tui.views.findings import Finding, HealthReport
from termal_tui.views.health import CHECKING, MAX_SHOWN, HealthView, identity

NOON = datetime(2026, 11, 30, 12, 0, 0, tzinfo=UTC)


class Driven:
    """A wall clock and a monotonic clock moved by calls."""

    def __init__(self) -> None:
        self.now = NOON
        self.seconds = 1000.0

    def wall(self) -> datetime:
        return self.now

    def mono(self) -> float:
        return self.seconds

    def advance(self, seconds: float) -> None:
        self.now += timedelta(seconds=seconds)
        self.seconds += seconds


def finding(kind: str = "never-woken", mailbox: str = "m1", session: str = "s1", rows: int = 2):
    return Finding(
        kind, mailbox, "planner ⇄ reviewer", session, "reviewer", rows, 3, "x", 600.0, rows, 1
    )


def report(*found: Finding, mailboxes: int = 4, unread: int = 9) -> HealthReport:
    return HealthReport(findings=list(found), mailboxes=mailboxes, unread=unread)


def text(segments: list[tuple[str, str]]) -> str:
    return "".join(part for part, _style in segments)


def view(clock: Driven, **kw: object) -> HealthView:
    return HealthView(clock=clock.wall, monotonic=clock.mono, file_name="coordination.sqlite", **kw)  # type: ignore[arg-type]


def test_before_the_first_pass_it_says_it_is_checking():
    model = view(Driven())
    assert text(model.status(118)) == "◌ Checking every mailbox…"
    assert model.findings == [] and model.more == 0


def test_a_pass_is_counted_whole_and_listed_up_to_the_limit():
    clock = Driven()
    model = view(clock)
    many = [finding(mailbox=f"m{n}", rows=1) for n in range(MAX_SHOWN + 7)]
    model.begin()
    clock.advance(0.1)
    model.loaded(report(*many, mailboxes=MAX_SHOWN + 7))
    assert len(model.findings) == MAX_SHOWN and model.more == 7
    assert model.counts == (MAX_SHOWN + 7, MAX_SHOWN + 7, MAX_SHOWN + 7)
    assert model.more_line().startswith("… and 7 more findings, less severe or more recent")
    line = text(model.status(200))
    assert line.startswith("● Live 12:00:00 · 507 stuck unread rows in 507 of 507 mailboxes")
    assert line.endswith(" · enter opens the first affected message")


def test_the_status_line_gives_way_as_the_width_shrinks():
    clock = Driven()
    model = view(clock)
    model.begin()
    model.loaded(report(finding(rows=1), mailboxes=1))
    assert "1 stuck unread row in 1 of 1 mailbox" in text(model.status(120))
    for room in (120, 60, 40):
        assert len(text(model.status(room))) <= max(room, 40), room
    assert text(model.status(40)) == "● Live 12:00:00 · 1 stuck in 1 mailbox"


def test_nothing_stuck_and_paused_and_checking_say_so():
    clock = Driven()
    model = view(clock, live=False)
    model.begin()
    model.loaded(report(mailboxes=1, unread=0))
    assert text(model.status(118)).startswith("⏸ Paused 12:00:00 · ✓ Nothing is stuck: 1 mailbox")
    model = view(clock)
    model.begin()
    model.loaded(report(finding()))
    model.begin()  # the next pass runs over the last report
    assert text(model.status(118)).endswith(CHECKING)


def test_stale_keeps_the_time_of_the_last_good_pass_and_its_findings():
    clock = Driven()
    model = view(clock)
    model.begin()
    model.loaded(report(finding()))
    clock.advance(300)
    model.begin()
    model.failed("the disk went away")
    assert text(model.status(118)) == (
        "● Stale 12:00:00 · the findings of that pass\nthe disk went away"
    )
    clock.advance(300)  # later redraws do not move the time on
    assert text(model.status(118)).startswith("● Stale 12:00:00 ")
    assert len(model.findings) == 1
    model.begin()
    model.loaded(report(finding()))
    assert text(model.status(118)).startswith("● Live 12:10:00 ")


def test_a_failure_before_any_good_pass_shows_no_time_it_never_had():
    clock = Driven()
    model = view(clock)
    model.begin()
    model.failed("storage is busy")
    first = text(model.status(118))
    clock.advance(60)
    assert first == text(model.status(118)) == "● Stale\nstorage is busy"


def test_a_file_that_is_not_there_says_so_without_a_moving_time():
    """Issue 24: opened while the file is gone it said ``● Stale 07:24:14`` with a time
    that moved on at each redraw, over an empty list."""
    clock = Driven()
    model = view(clock)
    model.file_missing("the database file coordination.sqlite is gone; waiting for it")
    first = text(model.status(118))
    assert first.startswith("◌ Not there yet · coordination.sqlite does not exist (yet)")
    assert "Stale" not in first and "12:00" not in first
    clock.advance(3600)
    assert text(model.status(118)) == first
    # It appears and a pass succeeds: Live from then on.
    model.begin()
    model.loaded(report())
    assert text(model.status(118)).startswith("● Live 13:00:00 · ✓ Nothing is stuck")
    # Gone again after a good pass: Stale with that pass's time, findings kept.
    model.file_missing("the database file coordination.sqlite is gone")
    assert text(model.status(118)).startswith("● Stale 13:00:00")


def test_the_highlight_stays_on_the_same_finding_across_passes():
    clock = Driven()
    model = view(clock)
    a, b, c = finding(mailbox="a"), finding(mailbox="b"), finding(mailbox="c")
    model.loaded(report(a, b, c))
    before = model.findings
    model.loaded(report(c, a))  # b is gone; a moved
    assert model.highlight_after(before, 0) == 1  # a
    assert model.highlight_after(before, 1) == 0  # b is not listed: the first
    assert identity(model.findings[1]) == identity(a)


def test_the_highlight_stays_on_the_more_line():
    clock = Driven()
    model = view(clock)
    many = [finding(mailbox=f"m{n:04d}") for n in range(MAX_SHOWN + 3)]
    model.loaded(report(*many))
    before, more = model.findings, model.more
    model.loaded(report(*many, finding(mailbox="new")))
    assert model.highlight_after(before, MAX_SHOWN, more) == MAX_SHOWN


def test_a_slow_pass_spaces_out_the_next_ones_on_the_driven_clock():
    clock = Driven()
    model = view(clock)
    assert model.due()
    model.begin()
    assert not model.due() and not model.due(asked=True)  # never two at once
    clock.advance(0.1)
    model.loaded(report())
    assert model.due()  # a fast pass: the next one at once
    model.begin()
    clock.advance(1.0)  # a slow pass: the next waits 20 times as long
    model.loaded(report())
    clock.advance(19.0)
    assert not model.due()
    assert model.due(asked=True)  # a person asking still gets one
    clock.advance(1.5)
    assert model.due()


def test_the_title_gives_way_by_words_never_mid_word():
    model = view(Driven())
    assert text(model.heading(120)) == (
        "Delivery health · stuck hand-offs, worst first · coordination.sqlite"
    )
    assert text(model.heading(58)) == "Delivery health · stuck hand-offs, worst first"
    assert text(model.heading(30)) == "Delivery health"


def test_nothing_stuck_says_the_short_form_when_the_long_one_would_wrap():
    clock = Driven()
    model = view(clock)
    model.loaded(report(mailboxes=3, unread=0))
    assert text(model.status(120)).endswith("every unread row is recent or on its way.")
    short = text(model.status(76))
    assert short == "● Live 12:00:00 · ✓ Nothing is stuck: 3 mailboxes, 0 unread."
    assert text(model.status(58)) == "● Live 12:00:00 · ✓ Nothing is stuck."


# --------------------------------------------------------------- who holds each channel


def _listener(session: str, kind: str = "local", since: float = 0.0, **more: object):
    from termal_tui.views.notifiers import Listener

    at = since or NOON.timestamp() - 3540  # 11:01 UTC
    fields = {"pid": 4242, "host": "devbox", "peer": None} | more
    return Listener(
        f"l-{session}", session, kind, fields["pid"], fields["host"], fields["peer"], at, at
    )


def _notifiers():
    from termal_tui.views.notifiers import Notifier

    return {
        "s1": Notifier("s1", "planner", True, None, _listener("s1")),
        "s2": Notifier("s2", "backend", False, None),
        "s3": Notifier("s3", "alpha", False, NOON.timestamp() - 180),  # hooks ran 3 min ago
        "s4": Notifier(
            "s4",
            "remote\x1b[31mbob",  # an agent chose the name: no escape reaches the screen
            True,
            None,
            _listener(
                "s4",
                "remote",
                NOON.timestamp() - 86_400 - 60,
                pid=99,
                host="10.0.0.7",
                peer="77@lap\ntop",
            ),
        ),
    }


def _text(lines) -> list[str]:
    return ["".join(text for text, _style in line) for line in lines]


def test_the_channels_section_says_who_holds_each_session_s_channel_and_since_when():
    clock = Driven()
    view = HealthView(clock=clock.wall, monotonic=clock.mono)
    view.begin()
    view.loaded(report(), _notifiers(), NOON)
    assert _text(view.channel_lines(400)) == [
        "channels: planner ← local pid 4242 since 11:01 UTC"
        " · remote␛[31mbob ← remote 10.0.0.7 (shim 77@lap top) since 2026-11-29 11:59 UTC"
        " · alpha ← nobody (hooks 3 min ago) · backend ← nobody"
    ]


def test_without_a_session_registry_there_is_no_channels_section():
    clock = Driven()
    view = HealthView(clock=clock.wall, monotonic=clock.mono)
    view.begin()
    view.loaded(report(), None, NOON)
    assert view.channel_lines(120) == []
    view.begin()
    view.loaded(report(), {}, NOON)
    assert _text(view.channel_lines(120)) == ["channels: no session is registered"]


def test_the_channels_section_wraps_between_sessions_and_says_how_many_more():
    from termal_tui.views.notifiers import Notifier

    clock = Driven()
    view = HealthView(clock=clock.wall, monotonic=clock.mono)
    many = {f"s{i:02}": Notifier(f"s{i:02}", f"agent-{i:02}", False, None) for i in range(40)}
    view.begin()
    view.loaded(report(), many, NOON)
    lines = _text(view.channel_lines(60))
    assert len(lines) == 3 and all(len(line) <= 60 for line in lines)
    assert lines[0].startswith("channels: agent-00 ← nobody · agent-01 ← nobody")
    assert lines[1].startswith("          agent-")  # lined up under the first
    shown = sum(line.count("← nobody") for line in lines)
    assert lines[-1].endswith(f"… and {40 - shown} more sessions")
    # a session is never split across lines
    assert all(line.rstrip().endswith(("nobody", "sessions")) for line in lines)
