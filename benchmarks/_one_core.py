"""Import first (before NumPy or Numba) to run a benchmark single-threaded on one
core: the thread variables of the BLAS libraries and Numba set to 1, pullback's
parallel maps and tiered compilation off, the process pinned to its lowest core."""
import os

for _v in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS", "NUMBA_NUM_THREADS"):
    os.environ[_v] = "1"
os.environ["PULLBACK_PARALLEL"] = "0"
os.environ.setdefault("PULLBACK_TIERED", "0")
if hasattr(os, "sched_setaffinity"):
    os.sched_setaffinity(0, {min(os.sched_getaffinity(0))})
