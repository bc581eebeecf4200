"""Deliberately broken implementations, each breaking one rule, for the TCK to catch."""
