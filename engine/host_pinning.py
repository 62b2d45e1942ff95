"""Page-locked ("pinned") host memory for the batches a GPU network call copies from.

onnxruntime's CUDA provider copies each call's input from host memory to the GPU.  From ordinary
(pageable) memory the CUDA driver first copies it, a chunk at a time, into a page-locked staging
buffer of its own and the GPU reads it from there: a CPU memcpy on the calling thread beside the
GPU's transfer.  Memory registered with the CUDA runtime (``cudaHostRegister``) is read by the GPU's
copy engine directly.  A shogi batch of 256 positions is 30 MB of float32 planes a call
(``docs/gpu.md``), about the GPU's time for the convolutions of a 10x128 network.

:class:`HostPinning` registers the memory of the arrays the engine hands onnxruntime: the search's
batch buffers and the evaluator's padding buffer, which live as long as the search or the network.
It pins an array's owning buffer (the array at the end of its ``base`` chain) the second time that
buffer is seen, so an array made for one call is never pinned (registering costs about as much as a
copy), and unregisters it when the buffer is freed.  Where the runtime is missing or refuses, nothing
is pinned and everything works as before.
"""

from __future__ import annotations

import ctypes
import functools
import logging
import threading
import weakref
from collections.abc import Sequence
from typing import Protocol

import numpy as np

log = logging.getLogger(__name__)

#: ``cudaHostRegisterPortable``: pinned for every CUDA context, not only the calling thread's.
HOST_REGISTER_PORTABLE = 1

#: The CUDA runtime's library names, newest first (onnxruntime-gpu 1.31 is built for CUDA 13).
CUDART_NAMES: tuple[str, ...] = (
    "libcudart.so.13",
    "libcudart.so.12",
    "libcudart.so",
    "cudart64_13.dll",
    "cudart64_12.dll",
)

#: Buffers smaller than this are not worth a registration (their copy is a few microseconds).
MIN_PINNED_BYTES = 1 << 20


class CudaRuntime(Protocol):
    """The three calls of the CUDA runtime API this module uses (``ctypes`` functions of libcudart)."""

    def cudaHostRegister(self, ptr: ctypes.c_void_p, size: ctypes.c_size_t, flags: ctypes.c_uint) -> int: ...

    def cudaHostUnregister(self, ptr: ctypes.c_void_p) -> int: ...

    def cudaGetLastError(self) -> int: ...


def load_cuda_runtime(names: Sequence[str] = CUDART_NAMES) -> CudaRuntime | None:
    """The CUDA runtime library (the one onnxruntime's CUDA provider loaded, when the names match), or
    ``None`` when none of ``names`` loads."""
    for name in names:
        try:
            lib = ctypes.CDLL(name)
        except OSError:
            continue
        lib.cudaHostRegister.restype = ctypes.c_int
        lib.cudaHostRegister.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_uint]
        lib.cudaHostUnregister.restype = ctypes.c_int
        lib.cudaHostUnregister.argtypes = [ctypes.c_void_p]
        lib.cudaGetLastError.restype = ctypes.c_int
        lib.cudaGetLastError.argtypes = []
        return lib
    return None


def owning_array(array: np.ndarray) -> np.ndarray | None:
    """The array whose buffer ``array`` views (itself if it owns its memory), or ``None`` when that
    memory belongs to something else than an array (bytes, an mmap) or is not one contiguous block."""
    owner = array
    while isinstance(owner.base, np.ndarray):
        owner = owner.base
    if owner.base is not None or not owner.flags.c_contiguous:
        return None
    return owner


class HostPinning:
    """Registers long-lived numpy buffers with the CUDA runtime so that GPU copies read them directly.

    Args:
        runtime: the CUDA runtime's functions (:func:`load_cuda_runtime`).
        min_bytes: buffers smaller than this are left as they are.

    Attributes:
        pinned_bytes: bytes registered now.
        enabled: ``False`` once the runtime refused a registration (then nothing more is tried).
    """

    def __init__(self, runtime: CudaRuntime, min_bytes: int = MIN_PINNED_BYTES) -> None:
        self._runtime = runtime
        self._min_bytes = min_bytes
        self._lock = threading.RLock()  # weak-reference callbacks may run inside pin's lock (the GC)
        #: buffers seen once, by id (the weak reference tells a reused id from the same buffer)
        self._seen: dict[int, weakref.ref[np.ndarray]] = {}
        #: buffers registered, by id
        self._pinned: dict[int, weakref.ref[np.ndarray]] = {}
        self.pinned_bytes = 0
        self.enabled = True

    @classmethod
    def load(cls, min_bytes: int = MIN_PINNED_BYTES) -> HostPinning | None:
        """A pinning over the CUDA runtime library, or ``None`` when it cannot be loaded."""
        runtime = load_cuda_runtime()
        return cls(runtime, min_bytes) if runtime is not None else None

    def pin(self, array: np.ndarray) -> bool:
        """Register ``array``'s owning buffer if this is the second time it is seen (and it is large
        enough); ``True`` when the buffer is registered now (by this call or an earlier one)."""
        if not self.enabled:
            return False
        owner = owning_array(array)
        if owner is None or owner.nbytes < self._min_bytes:
            return False
        key = id(owner)
        with self._lock:
            held = self._pinned.get(key)
            if held is not None and held() is owner:
                return True
            seen = self._seen.get(key)
            if seen is None or seen() is not owner:
                self._seen[key] = weakref.ref(owner, functools.partial(self._forget, key))
                return False
            del self._seen[key]
            return self._register(owner, key)

    def _register(self, owner: np.ndarray, key: int) -> bool:
        """Register ``owner`` (the lock held); unregistered again when it is freed."""
        address = owner.ctypes.data
        status = self._runtime.cudaHostRegister(
            ctypes.c_void_p(address), ctypes.c_size_t(owner.nbytes), ctypes.c_uint(HOST_REGISTER_PORTABLE)
        )
        if status != 0:
            # Clear the calling thread's error so that onnxruntime's own checks do not report it.
            self._runtime.cudaGetLastError()
            self.enabled = False
            log.warning(
                "cudaHostRegister failed (CUDA error %d): network inputs stay in pageable memory", status
            )
            return False
        nbytes = owner.nbytes
        self.pinned_bytes += nbytes
        self._pinned[key] = weakref.ref(owner)
        # Runs when the buffer is freed, before numpy releases its memory; not at interpreter exit,
        # when the CUDA runtime may already be gone (the process's memory goes with it).
        finalizer = weakref.finalize(owner, self._unregister, key, address, nbytes)
        finalizer.atexit = False
        return True

    def _unregister(self, key: int, address: int, nbytes: int) -> None:
        """Give a freed buffer's pages back to the pager."""
        if self._runtime.cudaHostUnregister(ctypes.c_void_p(address)) != 0:
            self._runtime.cudaGetLastError()
        with self._lock:
            del self._pinned[key]  # the buffer dies here, so its id cannot have been taken again yet
            self.pinned_bytes -= nbytes

    def _forget(self, key: int, _ref: object = None) -> None:
        """A buffer seen once was freed (the weak reference's callback)."""
        with self._lock:
            seen = self._seen.get(key)
            if seen is not None and seen() is None:
                del self._seen[key]
