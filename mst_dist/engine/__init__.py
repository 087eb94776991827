"""The engine: builds each Borůvka round's Dask task graphs from the kernels and runs them."""
