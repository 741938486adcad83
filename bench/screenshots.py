"""Save SVG screenshots of the demo into docs/screenshots/. Run: python bench/screenshots.py"""

from __future__ import annotations

import asyncio
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from tests.viewer_support import SNAPSHOT_ROOT, app_for, demo_copy  # noqa: E402


async def shoot(path: Path, name: str, names: tuple[str, ...] = (), expand: int | None = None):
    app = app_for(path)
    async with app.run_test(size=(120, 40)) as pilot:
        for _ in range(3):
            await app.workers.wait_for_complete()
            await pilot.pause()
        for summary in app.summaries:
            if names and sorted(p.display_name for p in summary.participants) == sorted(names):
                app.open_mailbox(summary.id)
        for _ in range(3):
            await app.workers.wait_for_complete()
            await pilot.pause()
        view = app.active_view()
        if view is not None and expand is not None:
            thread = view.query_one("#thread")
            thread.highlighted = thread.get_option_index(view.messages[expand].id)
            await pilot.press("enter")
            await pilot.pause()
        app.save_screenshot(filename=f"{name}.svg", path=str(ROOT / "docs" / "screenshots"))


def main() -> None:
    path = demo_copy(SNAPSHOT_ROOT / "screens")
    asyncio.run(shoot(path, "index"))
    asyncio.run(shoot(path, "thread", ("planner", "backend"), expand=3))
    asyncio.run(shoot(path, "hostile", ("planner", "frontend"), expand=2))


if __name__ == "__main__":
    main()
