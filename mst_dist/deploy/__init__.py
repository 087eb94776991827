"""Clusters mst-dist starts or joins: embedded/local, local CUDA, SLURM/PBS (dask-jobqueue), MPI."""
