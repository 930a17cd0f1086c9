"""compiler/latency_hiding package."""
