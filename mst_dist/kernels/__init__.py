"""Array kernels: arrays in, arrays out; no Dask, no config, no logging, no I/O.

``reference`` holds plain NumPy versions (the oracle for the fast ones),
``cpu`` the Numba versions with the same signatures.
"""
