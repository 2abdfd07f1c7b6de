"""The benchmark harness: our platform in its production topology against the official SDK server."""
