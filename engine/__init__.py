"""Tabula's engine: rules adapters (``games``), search, inference and the session facade.

Nothing in this package imports torch."""
