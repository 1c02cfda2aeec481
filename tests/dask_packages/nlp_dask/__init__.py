"""A kernel package for the Dask tests: what a cluster's workers import by name."""
