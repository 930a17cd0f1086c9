"""vdla_sim package."""
