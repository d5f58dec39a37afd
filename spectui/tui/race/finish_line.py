"""FinishLine: while racing, who has finished and when; once every lane has, the verdict (who finished
first, by how much in seconds and x), the same tokens or where they part, and why (tokens per pass
against what a pass costs). The keys are in the footer."""

from __future__ import annotations

from rich.text import Text

from ...views.race_view import RaceView
from ..shared.panel import Panel, append_lines


class FinishLine(Panel):
    DEFAULT_CSS = "FinishLine { height: 3; }"  # race.tcss

    def draw(self, width: int, height: int) -> Text:
        race: RaceView | None = self.view if isinstance(self.view, RaceView) else None
        st = self.styles_map()
        t = Text()
        if race is None or not race.lanes:
            return Text("on your marks…", st["dim"])
        lines: list[Text] = []
        if race.error:
            lines.append(Text(f"ERROR: {race.error}", "bold reverse"))
        if race.done and race.verdict:
            first, *rest = race.verdict
            lines.append(Text("FINISH ", "bold reverse") + Text(" " + first, "bold"))
            lines.extend(Text(x) for x in rest)
        else:
            done = [lane for lane in race.lanes if lane.finished]
            line = Text("finish line: ", "bold")
            if not done:
                line.append("racing…", st["dim"])
            for lane in sorted(done, key=lambda x: x.place):
                line.append(f"{lane.name} in {lane.finish_s:.2f} s  ")
            lines.append(line)
        return append_lines(t, lines[:height], width)
