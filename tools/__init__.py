"""Tooling that is not shipped to executors: the CDC test generator and oracle model, the benchmark."""
