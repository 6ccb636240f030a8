"""``python -m experiments``: see :mod:`experiments.cli`."""

from .cli import main

raise SystemExit(main())
