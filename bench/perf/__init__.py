"""The pieces of bench/throughput.py: targets (how each broker starts), workloads, measurement, reports."""
