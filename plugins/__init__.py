"""Integrations of the Reactive Streams TCK: the pytest plugin and, later, reporters and adapters."""
