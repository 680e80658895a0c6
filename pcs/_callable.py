"""Make a view's module callable as the view's function.

``pcs.budget`` is both the module ``pcs/budget.py`` and the public function
``pcs.budget(...)`` (likewise ``pcs.envelope`` and ``pcs.replay``). A Python
package attribute cannot be both a module and a function, and importing the
submodule rebinds the attribute to the module; so the module itself is made
callable: its class becomes a ``ModuleType`` subclass whose ``__call__`` is the
function. ``import pcs.budget as m``, ``from pcs.budget import X`` and
``pcs.budget(...)`` then all work.
"""
from __future__ import annotations

import sys
import types

__all__ = ["make_module_callable"]


def make_module_callable(module_name: str, func_name: str) -> None:
    """Let ``sys.modules[module_name](...)`` call its attribute ``func_name``.

    Raises:
        KeyError: the module is not imported; AttributeError: no such function.
    """
    module = sys.modules[module_name]
    func = getattr(module, func_name)
    cls = type(f"CallableModule[{module_name}]", (types.ModuleType,), {
        "__call__": staticmethod(func),
        "__doc__": module.__doc__,
    })
    module.__class__ = cls
