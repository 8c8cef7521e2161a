"""Shared by the Python tests: Hypothesis keeps no example database in the checkout, and runs the same examples each
time (derandomized), so that a run is reproducible and fast."""

from hypothesis import settings

settings.register_profile("idemkey", database=None, derandomize=True, deadline=None)
settings.load_profile("idemkey")
