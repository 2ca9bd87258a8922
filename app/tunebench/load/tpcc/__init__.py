"""The TPC-C-like workload family (see family.py)."""
