"""The options dask-cuda's classes take, for stand-ins of them on machines without a GPU.

Where dask-cuda is installed its own signatures are read (``inspect.signature``);
elsewhere (CI: no GPU, no dask-cuda) the parameter names below, those of
dask-cuda 26.10, stand for them.  What a class takes beyond its own parameters
(``**kwargs``) it hands on: ``LocalCUDACluster`` to distributed's
``LocalCluster`` (and from there to each ``Nanny``), ``CUDAWorker`` to each
``Nanny``; those are read from the installed distributed.  A stand-in that
checks its options against these names fails on a misspelled option as the real
class would, instead of taking anything.
"""
import importlib
import inspect

#: dask-cuda 26.10's ``LocalCUDACluster.__init__`` parameters (then ``**kwargs``).
LOCAL_CUDA_CLUSTER = (
    "CUDA_VISIBLE_DEVICES", "n_workers", "threads_per_worker", "memory_limit", "device_memory_limit",
    "enable_cudf_spill", "cudf_spill_stats", "local_directory", "protocol", "enable_tcp_over_ucx",
    "enable_infiniband", "enable_nvlink", "enable_rdmacm", "rmm_pool_size", "rmm_maximum_pool_size",
    "rmm_managed_memory", "rmm_async", "rmm_allocator_external_lib_list", "rmm_release_threshold",
    "rmm_log_directory", "rmm_track_allocations", "log_spilling", "pre_import",
)

#: dask-cuda 26.10's ``CUDAWorker.__init__`` parameters (then ``**kwargs``).
CUDA_WORKER = (
    "scheduler", "host", "listen_address", "contact_address", "nthreads", "name", "memory_limit",
    "device_memory_limit", "enable_cudf_spill", "cudf_spill_stats", "rmm_pool_size", "rmm_maximum_pool_size",
    "rmm_managed_memory", "rmm_async", "rmm_allocator_external_lib_list", "rmm_release_threshold",
    "rmm_log_directory", "rmm_track_allocations", "pid_file", "resources", "dashboard", "dashboard_address",
    "local_directory", "scheduler_file", "interface", "preload", "dashboard_prefix", "security",
    "enable_tcp_over_ucx", "enable_infiniband", "enable_nvlink", "enable_rdmacm", "worker_class", "pre_import",
    "worker_port",
)

_RECORDED = {"LocalCUDACluster": LOCAL_CUDA_CLUSTER, "CUDAWorker": CUDA_WORKER}


def named_parameters(fn):
    """The names a callable takes by keyword (``self`` and ``*args``/``**kwargs`` left out)."""
    return {p.name for p in inspect.signature(fn).parameters.values()
            if p.name != "self" and p.kind in (p.POSITIONAL_OR_KEYWORD, p.KEYWORD_ONLY)}


def own_parameters(cls_name):
    """``cls_name``'s own parameters: the installed dask-cuda's where there is one, else dask-cuda 26.10's."""
    try:
        dc = importlib.import_module("dask_cuda")
    except ImportError:
        return set(_RECORDED[cls_name])
    return named_parameters(getattr(dc, cls_name).__init__)


def accepted(cls_name):
    """Every option ``cls_name`` accepts: its own parameters and those its ``**kwargs`` reach."""
    from distributed import LocalCluster, Nanny

    handed_on = named_parameters(Nanny.__init__)
    if cls_name == "LocalCUDACluster":
        handed_on |= named_parameters(LocalCluster.__init__)
    return own_parameters(cls_name) | handed_on


def checked(cls_name, fn):
    """``fn(**options)``, after checking every option is one the real ``cls_name`` accepts (else TypeError)."""
    names = accepted(cls_name)

    def stand_in(**options):
        unknown = sorted(set(options) - names)
        if unknown:
            raise TypeError(f"{cls_name}() got unexpected keyword argument(s) {', '.join(unknown)}")
        return fn(**options)

    return stand_in
