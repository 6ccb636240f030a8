"""Hypothesis profiles for the property suite (``tests/test_properties.py``).

``ci`` (default): a short deterministic run. ``long``: many random cases, for a release or
after a change to input handling::

    OPTITREE_HYPOTHESIS_PROFILE=long python -m pytest tests/test_properties.py -p no:cacheprovider
"""

import os

from hypothesis import HealthCheck, settings

_COMMON = dict(deadline=None, database=None, print_blob=True,
               suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large,
                                      HealthCheck.filter_too_much])
settings.register_profile("ci", max_examples=30, derandomize=True, **_COMMON)
settings.register_profile("long", max_examples=1500, **_COMMON)
settings.load_profile(os.environ.get("OPTITREE_HYPOTHESIS_PROFILE", "ci"))
