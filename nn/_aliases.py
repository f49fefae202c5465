"""The module names a PyTorch script spells, as aliases of nn's own modules, so that after
``import nn as torch`` the script's ``torch.nn.Linear``, ``import torch.nn.functional as F``
(here ``import nn.nn.functional as F``) and ``torch.utils.data.DataLoader`` resolve.

``nn.nn`` is the package itself (``nn`` plays both ``torch`` and ``torch.nn``) and
``nn.utils.data`` is ``nn.data``. ``install`` puts the aliases in ``sys.modules`` for the
modules already imported and adds a finder that maps any later ``nn.nn.X`` / ``nn.utils.data.X``
import to the real module (``nn.X`` / ``nn.data.X``): one module object under two names, never
a second copy of it.
"""
from __future__ import annotations

import importlib
import importlib.abc
import importlib.machinery
import sys

# alias prefix -> real prefix (longest first, so nn.nn.utils.data.X resolves in two steps)
PREFIXES = (("nn.nn.", "nn."), ("nn.utils.data.", "nn.data."))
ROOTS = {"nn.nn": "nn", "nn.utils.data": "nn.data"}


def real_name(name: str):
    """The real module an alias names (``nn.nn.functional`` -> ``nn.functional``), or None."""
    if name in ROOTS:
        return ROOTS[name]
    for alias, real in PREFIXES:
        if name.startswith(alias):
            return real + name[len(alias):]
    return None


class _AliasLoader(importlib.abc.Loader):
    """Hands the import system the already-loaded real module; keeps its own ``__spec__``."""

    def __init__(self, module):
        self.module = module
        self.spec = getattr(module, "__spec__", None)
        self.loader = getattr(module, "__loader__", None)

    def create_module(self, spec):
        return self.module

    def exec_module(self, module):
        # the import system set the alias's spec on the module: give it back its own
        module.__spec__ = self.spec
        module.__loader__ = self.loader


class _AliasFinder(importlib.abc.MetaPathFinder):
    def find_spec(self, name, path=None, target=None):
        real = real_name(name)
        if real is None:
            return None
        module = importlib.import_module(real)
        spec = importlib.machinery.ModuleSpec(name, _AliasLoader(module),
                                              is_package=hasattr(module, "__path__"))
        return spec


_FINDER = _AliasFinder()


def install():
    """Register the aliases of the modules imported so far and the finder for the rest."""
    if _FINDER not in sys.meta_path:
        sys.meta_path.insert(0, _FINDER)
    for alias, real in ROOTS.items():
        if real in sys.modules:
            sys.modules.setdefault(alias, sys.modules[real])
    for name in list(sys.modules):
        for alias, real in PREFIXES:
            if name.startswith(real) and name != "nn.nn":
                sys.modules.setdefault(alias + name[len(real):], sys.modules[name])
