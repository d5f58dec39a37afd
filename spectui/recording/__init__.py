"""Traces written and read, and the one replay clock."""
