"""The contract every layer shares: typed immutable events, their JSON form, user errors and the run's
controls. Imports nothing above it (see docs/ARCHITECTURE.md)."""
