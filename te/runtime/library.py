"""``load_module``: a library written by ``export_library``, loaded without the compiler.

Formats (chosen by the file's suffix, as TVM's):

- ``.so`` (CPU): a shared library linked by the system C compiler. Besides the functions
  (symbols ``tw_<name>``) it exports ``tw_library_metadata`` / ``tw_library_metadata_size``
  (the JSON that ``LIBRARY_FORMAT`` names: target, entry, one ``FunctionInfo`` per function,
  for C hosts too) and ``tw_forked``, the fork flag of its parallel loops. The same JSON
  follows the ELF image in a checksummed trailer (``read_trailer``), which the loader checks
  and reads before ``dlopen``: a truncated file never reaches the dynamic loader (it would
  fault on it). Loading it is ``dlopen`` plus ctypes: no LLVM, no ``schedule``. Parallel
  loops call libgomp's ``GOMP_parallel``, which the library is linked against, so they run on
  the process's one thread pool (``te.runtime.set_num_threads``).
- ``.tar`` (CPU): ``lib0.o`` (the object file, metadata inside) and ``tensorweave.json``;
  loading links ``lib0.o`` with the C compiler into a temporary ``.so`` first. ``.o``: the
  object file alone, linked the same way.
- ``.tar`` (CUDA): ``tensorweave.json`` (kind "cuda"), ``kernels.py`` (the numba.cuda source
  of kernels and host code) and ``kernels.ptx`` when it was exported where NVVM runs.
  Loading compiles ``kernels.py`` with numba (on a GPU with numba's kernel cache; on the
  simulator it runs there), so it imports ``codegen_cuda`` (and with it ``schedule``). The
  PTX is kept for ``get_source("ptx")``; it is not loaded through the driver yet.

The metadata is checked field by field before anything is called (``FunctionInfo.from_json``),
and a ``.so``'s checksum before ``dlopen``: a damaged or foreign file is a ``LibraryError``,
not a crash. Nothing from a file is unpickled or evaluated as Python, except a CUDA library's
kernel source, which is Python by nature. Checksums stop accidents, not attackers: a ``.so`` is
native code, so, as with any shared library, load only libraries you trust.
"""
from __future__ import annotations

import ctypes
import ctypes.util
import hashlib
import json
import os
import platform
import tarfile
import tempfile

from . import threads
from .cpu import CPUFunction
from .errors import LibraryError
from .info import FunctionInfo

LIBRARY_FORMAT = "tensorweave-library"
LIBRARY_VERSION = 1
METADATA_SYMBOL = "tw_library_metadata"
METADATA_NAME = "tensorweave.json"
OBJECT_NAME = "lib0.o"
CUDA_SOURCE = "kernels.py"
CUDA_PTX = "kernels.ptx"
MAX_METADATA = 64 << 20
MAX_MEMBER = 1 << 30
TRAILER_MAGIC = b"TWLIB001"


class Module:
    """A loaded library (TVM's ``runtime.Module``): ``mod["name"]`` or ``mod.get_function``
    gives a function, ``mod(*args)`` calls the entry function."""

    def __init__(self, kind, path, functions, entry, metadata, keep=()):
        self.type_key = kind
        self.path = path
        self._functions = dict(functions)
        self.entry_name = entry
        self.metadata = metadata
        self._keep = keep               # the loaded library (its code must stay mapped)
        self.imported_modules = [f for f in self._functions.values()] if kind == "cuda" \
            else []

    @property
    def entry_func(self):
        return self._functions[self.entry_name]

    def __getitem__(self, name):
        if name not in self._functions:
            raise KeyError(f"library {self.path} has no function {name!r}; it has "
                           f"{', '.join(map(repr, self._functions))}")
        return self._functions[name]

    def get_function(self, name):
        return self[name]

    def __contains__(self, name):
        return name in self._functions

    def __call__(self, *args):
        return self.entry_func(*args)

    def time_evaluator(self, func_name=None, dev=None, number=10, repeat=1, **kwargs):
        """Timings of ``func_name`` (default: the entry function), as TVM's."""
        func = self[func_name] if isinstance(func_name, str) else self.entry_func
        return func.time_evaluator(None, dev, number=number, repeat=repeat, **kwargs)

    def get_source(self, fmt="json"):
        """'json': the library's metadata; other formats as the CUDA module's."""
        if fmt in ("json", "metadata"):
            return json.dumps(self.metadata, indent=1)
        if self.type_key == "cuda":
            return self.entry_func.get_source(fmt)
        raise ValueError(f"get_source: a loaded CPU library has only its metadata ('json'); "
                         f"got {fmt!r}")

    def __repr__(self):
        sigs = "; ".join(_describe_function(f.info) for f in self._functions.values())
        return f"Module({self.type_key}, {self.path!r}, {sigs})"


def _describe_function(info):
    """``name(A: float32[n, 4], n: int32)`` from a FunctionInfo."""
    d = info.data
    parts = []
    for p in d["params"]:
        if "scalar" in p:
            name, dtype = d["vars"][p["scalar"]]
            parts.append(f"{name}: {dtype}")
        else:
            dims = [str(x) if isinstance(x, int) else x["text"] for x in p["shape"]]
            parts.append(f"{p['buffer']}: {p['dtype']}[{', '.join(dims)}]"
                         + (" out" if p["out"] else ""))
    return f"{d['name']}({', '.join(parts)})"


def load_module(path):
    """Load a library that ``export_library`` wrote (``.so``, ``.tar`` or ``.o``)."""
    path = os.fspath(path)
    if not os.path.isfile(path):
        raise FileNotFoundError(f"load_module: no file {path!r}")
    if path.endswith(".tar"):
        return _load_tar(path)
    if path.endswith(".o"):
        with tempfile.TemporaryDirectory(prefix="tw-load-") as tmp:
            return _link_and_load(path, path, tmp)
    return _load_shared(path, path)


# ----------------------------------------------------------------------------- CPU

def read_trailer(data, shown):
    """The metadata bytes of a ``.so`` that ``export_library`` wrote, after checking that the
    file is whole: the linked library is followed by the metadata, the sha256 of both, the
    metadata's length and ``TRAILER_MAGIC`` (loaders of shared libraries ignore bytes after
    the ELF image). A truncated or damaged file would make ``dlopen`` fault (a segment past
    the end of the file is a bus error), so it is refused before."""
    tail = 32 + 8 + len(TRAILER_MAGIC)
    if len(data) < tail or not data.endswith(TRAILER_MAGIC):
        raise LibraryError(f"load_module: {shown} is not a library that export_library wrote "
                           "(no tensorweave trailer), or it is truncated")
    n = int.from_bytes(data[-tail + 32:-len(TRAILER_MAGIC)], "little")
    if not 0 < n <= min(MAX_METADATA, len(data) - tail):
        raise LibraryError(f"load_module: {shown}: its metadata length {n} is invalid; the "
                           "file is damaged")
    digest = data[-tail:-tail + 32]
    body = data[:-tail]
    if hashlib.sha256(body).digest() != digest:
        raise LibraryError(f"load_module: {shown} is damaged (its checksum does not match); "
                           "export it again")
    return body[-n:]


def with_trailer(library_bytes, meta_bytes):
    """``library_bytes`` followed by the trailer that ``read_trailer`` checks."""
    body = library_bytes + meta_bytes
    return body + hashlib.sha256(body).digest() + len(meta_bytes).to_bytes(8, "little") \
        + TRAILER_MAGIC


def _load_shared(path, shown, meta_bytes=None):
    """Load shared library ``path``, whose metadata is ``meta_bytes`` (for a library that
    ``_link_and_load`` made from an object file) or else in the file's trailer."""
    if meta_bytes is None:
        with open(path, "rb") as f:
            meta_bytes = read_trailer(f.read(), shown)
    meta = _parse_json(meta_bytes, shown)
    if meta.get("kind") != "llvm":
        raise LibraryError(f"load_module: {shown}: a shared library holds CPU ('llvm') code, "
                           f"but its metadata says {meta.get('kind')!r}")
    _check_target(meta, shown)
    threads.gomp()                      # libgomp in the global scope, TW_NUM_THREADS applied
    for name in ("m", "mvec"):          # what vectorized math may call, if not linked in
        found = ctypes.util.find_library(name)
        if found:
            try:
                ctypes.CDLL(found, mode=ctypes.RTLD_GLOBAL)
            except OSError:
                pass
    try:
        lib = ctypes.CDLL(os.path.abspath(path))
    except OSError as err:
        raise LibraryError(f"load_module: {shown} is not a loadable shared library ({err}); "
                           "pass a file written by export_library") from None
    try:
        flag = ctypes.c_int32.in_dll(lib, threads.FORKED_SYMBOL)
    except ValueError:
        raise LibraryError(f"load_module: {shown} has no {threads.FORKED_SYMBOL} flag; the "
                           "file is damaged") from None
    threads.register_forked_flag(flag)
    functions = {}
    for f in meta["functions"]:
        info = f["info"]
        try:
            address = ctypes.cast(lib[f["symbol"]], ctypes.c_void_p).value
        except AttributeError:
            raise LibraryError(f"load_module: {shown}: the metadata names the function "
                               f"{f['symbol']}, which the library does not define") from None
        fn = CPUFunction(info, address)
        fn._library = lib               # the code stays mapped while the function lives
        functions[info.name] = fn
    return Module("llvm", shown, functions, meta["entry"], meta["raw"], lib)


def _embedded_metadata(path, shown):
    """The metadata that an object file carries (``tw_library_metadata``), read from the
    library linked from it (not yet called: only its data is read)."""
    try:
        lib = ctypes.CDLL(os.path.abspath(path))
        get, size = lib[METADATA_SYMBOL], lib[METADATA_SYMBOL + "_size"]
    except (OSError, AttributeError):
        raise LibraryError(f"load_module: {shown} is not an object file that export_library "
                           f"wrote (it has no {METADATA_SYMBOL})") from None
    get.restype, get.argtypes = ctypes.c_void_p, []
    size.restype, size.argtypes = ctypes.c_int64, []
    n = size()
    if not 0 < n <= MAX_METADATA:
        raise LibraryError(f"load_module: {shown}: its metadata size {n} is invalid")
    return ctypes.string_at(get(), n)


def _link_and_load(obj, shown, tmp):
    from .linker import link_shared
    out = os.path.join(tmp, "lib.so")
    libs = [lib for lib in (_soname("gomp"), _soname("mvec"), _soname("m")) if lib]
    link_shared([obj], out, libs)
    return _load_shared(out, shown, _embedded_metadata(out, shown))


def _soname(name):
    found = ctypes.util.find_library(name)
    return os.path.basename(found) if found else None


def _load_tar(path):
    members = _read_tar(path)
    if METADATA_NAME not in members:
        raise LibraryError(f"load_module: {path} has no {METADATA_NAME}; pass a .tar written "
                           "by export_library")
    meta = _parse_json(members[METADATA_NAME], path)
    if meta.get("kind") == "cuda":
        return _load_cuda(path, meta, members)
    if OBJECT_NAME not in members:
        raise LibraryError(f"load_module: {path} has no {OBJECT_NAME}")
    with tempfile.TemporaryDirectory(prefix="tw-load-") as tmp:
        obj = os.path.join(tmp, OBJECT_NAME)
        with open(obj, "wb") as f:
            f.write(members[OBJECT_NAME])
        return _link_and_load(obj, path, tmp)


def _read_tar(path):
    """{name: bytes} of the regular files at the top of tar ``path`` (nothing is extracted
    to disk under names from the archive)."""
    try:
        with tarfile.open(path, "r:*") as tar:
            out = {}
            for m in tar.getmembers():
                if not m.isfile():
                    continue
                if "/" in m.name or m.name.startswith(".") or m.size > MAX_MEMBER:
                    raise LibraryError(f"load_module: {path}: unexpected member {m.name!r:.80}")
                out[m.name] = tar.extractfile(m).read()
            return out
    except (tarfile.TarError, EOFError, OSError) as err:
        raise LibraryError(f"load_module: {path} is not a readable tar archive ({err})") \
            from None


def _parse_json(data, shown):
    """The checked top level of a library's metadata, with each function a FunctionInfo."""
    try:
        meta = json.loads(bytes(data).decode("utf-8"))
    except (UnicodeDecodeError, ValueError, RecursionError) as err:
        raise LibraryError(f"load_module: {shown}: its metadata is not valid JSON ({err}); the "
                           "file is damaged") from None
    if not isinstance(meta, dict) or meta.get("format") != LIBRARY_FORMAT:
        raise LibraryError(f"load_module: {shown} is not a tensorweave library (no "
                           f"'{LIBRARY_FORMAT}' metadata)")
    if meta.get("version") != LIBRARY_VERSION:
        raise LibraryError(f"load_module: {shown} was written in library format version "
                           f"{meta.get('version')!r}; this tensorweave reads version "
                           f"{LIBRARY_VERSION}: export it again")
    funcs = meta.get("functions")
    if not isinstance(funcs, list) or not funcs or len(funcs) > 10_000:
        raise LibraryError(f"load_module: {shown}: its metadata lists no functions")
    out = dict(meta, raw=meta, functions=[])
    for f in funcs:
        if not isinstance(f, dict) or not isinstance(f.get("symbol"), str):
            raise LibraryError(f"load_module: {shown}: a function entry is malformed")
        info = FunctionInfo.from_json(f.get("info"), f"load_module: {shown}")
        out["functions"].append(dict(f, info=info))
    names = [f["info"].name for f in out["functions"]]
    if meta.get("entry") not in names:
        raise LibraryError(f"load_module: {shown}: the entry function {meta.get('entry')!r} "
                           "is not among its functions")
    return out


# ----------------------------------------------------------------------------- target checks

def _check_target(meta, shown):
    target = meta.get("target")
    if not isinstance(target, dict) or not all(isinstance(target.get(k), str)
                                               for k in ("triple", "cpu", "features")):
        raise LibraryError(f"load_module: {shown}: its metadata has no target")
    arch = target["triple"].split("-")[0]
    host = platform.machine()
    same = {"x86_64": ("x86_64", "amd64"), "aarch64": ("aarch64", "arm64")}
    if host.lower() not in same.get(arch, (arch,)):
        raise LibraryError(f"load_module: {shown} holds {arch} code ({target['triple']}); this "
                           f"machine is {host}: export it for this machine")
    missing = missing_cpu_features(target["features"])
    if missing:
        raise LibraryError(f"load_module: {shown} was compiled for a CPU with "
                           f"{', '.join(missing)} (-mcpu={target['cpu']}), which this CPU "
                           "lacks (running it would stop the process with an illegal "
                           "instruction); export it with a target this CPU has, e.g. "
                           "te.build(..., target='llvm -mcpu=x86-64-v2')")


# LLVM feature names that /proc/cpuinfo reports under the same name (up to "_" and "."):
# the ones whose absence makes code fault; others (tuning flags) are not checked
_CHECKED_PREFIXES = ("avx", "sse", "ssse", "fma", "f16c", "bmi", "popcnt", "lzcnt", "movbe",
                     "amx")


# LLVM names that /proc/cpuinfo spells otherwise
_CPUINFO_NAMES = {"bmi": "bmi1", "lzcnt": "abm", "sse3": "pni"}


def _normal(name):
    return name.lower().replace("_", "").replace(".", "").replace("-", "")


def missing_cpu_features(features: str):
    """The ``+`` features of an LLVM feature string that this x86 CPU's /proc/cpuinfo does
    not list (empty when it cannot tell: another OS or architecture)."""
    try:
        with open("/proc/cpuinfo") as f:
            text = f.read()
    except OSError:
        return []
    flags = set()
    for line in text.splitlines():
        if line.startswith("flags"):
            flags = {_normal(x) for x in line.split(":", 1)[1].split()}
            break
    if not flags or "sse2" not in flags:
        return []
    missing = []
    for feat in features.split(","):
        if not feat.startswith("+"):
            continue
        name = _normal(_CPUINFO_NAMES.get(feat[1:], feat[1:]))
        if name.startswith(_CHECKED_PREFIXES) and not name.startswith("avx10") \
                and name not in flags:
            missing.append(feat[1:])
    return missing


# ----------------------------------------------------------------------------- CUDA

def _load_cuda(path, meta, members):
    """A CUDA library: the host metadata, the numba source (and PTX, kept for reading)."""
    if CUDA_SOURCE not in members:
        raise LibraryError(f"load_module: {path} has no {CUDA_SOURCE}")
    try:
        source = members[CUDA_SOURCE].decode("utf-8")
        ptx = members[CUDA_PTX].decode("utf-8") if CUDA_PTX in members else None
    except UnicodeDecodeError:
        raise LibraryError(f"load_module: {path}: its kernel source is not text") from None
    try:
        from codegen_cuda.module import CudaModule
    except ImportError as err:
        raise LibraryError(f"load_module: {path} holds CUDA kernels, which need numba.cuda "
                           f"({err})") from None
    functions = {}
    for f in meta["functions"]:
        kernels = f.get("kernels")
        if not isinstance(kernels, list) or not all(isinstance(k, str) for k in kernels):
            raise LibraryError(f"load_module: {path}: a function's kernel list is malformed")
        functions[f["info"].name] = CudaModule.from_library(f["info"], source, kernels, ptx)
    return Module("cuda", path, functions, meta["entry"], meta["raw"])
