"""Modal screens: help (key table) and new-prompt input."""
