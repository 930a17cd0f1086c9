"""bitstreams package."""
