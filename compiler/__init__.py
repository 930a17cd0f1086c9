"""Model -> program: front end, quantization, partitioning, layouts; tensorize, latency_hiding and cpu_fallback live below."""
