"""One fit, from a built formulation to a certified result: :class:`FitPipeline` and its stages.

The stages (exact engine, build, start, root bounds, backend solve, decode, certificate) are
named methods of :class:`FitPipeline` (:mod:`optitree.pipeline._fit`); beside them, one module
each: the engine's stage (``_engine.py``), its bounds on the root's split candidates
(``_root_bounds.py``), the root-split decomposition (``_decomposition.py``), starts
(``_start.py``), results of fits that end without a MIP (``_results.py``), certificate checks
(``_certificate.py``) and the watch (progress line and Ctrl-C, ``_progress.py``).
"""

from ._engine import STAGES, ExactStage, parse_acceleration
from ._fit import FitOutcome, FitPipeline, FitRequest
from ._progress import clear_stop, request_stop

__all__ = ["FitPipeline", "FitRequest", "FitOutcome", "ExactStage", "STAGES", "parse_acceleration",
           "request_stop", "clear_stop"]
