"""Third-party subjects the TCK is run on in the integration tests."""
