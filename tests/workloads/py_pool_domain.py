# Blocks of the pool's given back through Python's memory domain (t_python_pool_domain_free):
# run with PYTHONMALLOC=malloc, so that PyMem_Free is plain free: sampling, the recorder wraps
# the domain's malloc and keeps its own free (libheapsnap/pymem.c). take_blocks mallocs 16 blocks of 4 MiB with libc's malloc (sampled surely at
# 256 KiB, so placed by the pool), which are then freed by PyMem_Free. Prints glibc's mmapped
# bytes those blocks added (mallinfo2), 0 when the pool placed them all, and those their frees
# took away, 0 when they went back to the pool.
import ctypes
import time

libc = ctypes.CDLL(None)
libc.malloc.restype = ctypes.c_void_p
libc.malloc.argtypes = [ctypes.c_size_t]


class MallInfo2(ctypes.Structure):
    _fields_ = [(n, ctypes.c_size_t) for n in ("arena", "ordblks", "smblks", "hblks", "hblkhd",
                                                "usmblks", "fsmblks", "uordblks", "fordblks", "keepcost")]


libc.mallinfo2.restype = MallInfo2


class Allocator(ctypes.Structure):  # PyMemAllocatorEx
    _fields_ = [(n, ctypes.c_void_p) for n in ("ctx", "malloc", "calloc", "realloc", "free")]


def domain_wrapped():
    """Whether PYMEM_DOMAIN_MEM's malloc is libheapsnap.so's, by the maps."""
    a = Allocator()
    ctypes.pythonapi.PyMem_GetAllocator(1, ctypes.byref(a))
    with open("/proc/self/maps") as maps:
        for line in maps:
            f = line.split()
            lo, hi = (int(x, 16) for x in f[0].split("-"))
            if len(f) > 5 and f[5].endswith("/libheapsnap.so") and lo <= (a.malloc or 0) < hi:
                return True
    return False


# The wrappers go in by a pending call, which the eval loop runs between bytecodes.
deadline = time.monotonic() + 60
while not domain_wrapped():
    assert time.monotonic() < deadline, "PYMEM_DOMAIN_MEM was never wrapped"
    time.sleep(0.001)

py_free = ctypes.pythonapi.PyMem_Free
py_free.argtypes = [ctypes.c_void_p]


def take_blocks():
    return [libc.malloc(4 << 20) for _ in range(16)]


before = libc.mallinfo2().hblkhd
blocks = take_blocks()
added = libc.mallinfo2().hblkhd - before
for b in blocks:
    py_free(b)
print("glibc mmapped", added)
# glibc unmapping a block of the pool's as one of its own chunks would take it off its count.
print("glibc freed", before + added - libc.mallinfo2().hblkhd)
