"""The race's Textual face: RaceApp over a ``spectui.views.race_timeline.Race`` (one replay clock, one pane per
lane made of the run face's own TokenStream and PassRibbon under a LaneHeader), a FinishLine, keys as in
the replay, the token inspector in the focused pane. ``race_cast`` renders it to asciicast v2."""
