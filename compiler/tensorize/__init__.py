"""compiler/tensorize package."""
