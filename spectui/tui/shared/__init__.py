"""What the Textual faces share: the line-API panel, sparkline, themes, start/stop lifecycle."""
