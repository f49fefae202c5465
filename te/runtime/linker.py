"""The system C compiler as a linker: object files -> a shared library (as TVM's
``export_library`` links with ``cc -shared``)."""
from __future__ import annotations

import os
import shutil
import subprocess

from .errors import LibraryError

COMPILERS = ("cc", "gcc", "clang")


def find_compiler(cc=None):
    """The C compiler to link with: ``cc``, else ``$CC``, else cc, gcc or clang on the PATH."""
    for name in ([cc] if cc else []) + ([os.environ["CC"]] if os.environ.get("CC") else []) \
            + list(COMPILERS):
        path = shutil.which(name)
        if path:
            return path
        if cc and name == cc:
            raise LibraryError(f"the C compiler {cc!r} was not found; install it or pass "
                               "another (cc='gcc')")
    raise LibraryError("linking a shared library needs a C compiler (cc, gcc or clang), and "
                       "none is on the PATH; install one (apt-get install gcc), set $CC, or "
                       "export a .tar or .o instead")


def link_shared(objects, output, libraries=(), cc=None):
    """Link ``objects`` (paths) into the shared library ``output``; ``libraries``: sonames
    (``libgomp.so.1``) the library needs at load time."""
    compiler = find_compiler(cc)
    cmd = [compiler, "-shared", "-fPIC", "-o", os.fspath(output), *map(os.fspath, objects),
           "-Wl,-Bsymbolic"]
    cmd += [f"-l:{lib}" for lib in libraries]
    try:
        proc = subprocess.run(cmd, capture_output=True, text=True, timeout=300)
    except (OSError, subprocess.TimeoutExpired) as err:
        raise LibraryError(f"linking {output} with {compiler} failed: {err}") from None
    if proc.returncode != 0:
        raise LibraryError(f"linking {output} failed ({' '.join(cmd)}):\n"
                           f"{proc.stderr.strip()[-2000:]}")
