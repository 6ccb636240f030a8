"""The MIP as numpy blocks (:class:`ModelSpec`) and its writers.

``ModelSpec`` is the solver-independent model every formulation builds; the modules beside it
emit it for HiGHS (:func:`compile_highs`) and Pyomo, write ``.lp``/``.mps`` files
(:func:`write_model`), estimate its memory before it is built (:func:`check_size`) and add
user constraints written in Pyomo (:func:`apply_user_constraints`). Imports numpy and scipy;
highspy and Pyomo only inside the functions that need them.
"""

from ._files import mps_text, write_model
from ._highs import compile_highs
from ._memory import ModelTooLargeError, check_size, estimate_bytes, estimate_peak_bytes, solve_profile
from ._spec import ModelSpec, RowBlock, VarBlock, solution_violation
from ._user_constraints import apply_user_constraints, user_rows

__all__ = ["ModelSpec", "VarBlock", "RowBlock", "solution_violation", "compile_highs", "write_model", "mps_text",
           "check_size", "estimate_bytes", "estimate_peak_bytes", "solve_profile", "ModelTooLargeError",
           "apply_user_constraints", "user_rows"]
