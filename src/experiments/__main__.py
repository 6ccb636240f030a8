"""``python -m experiments``: see :mod:`experiments.cli`."""

if __name__ == "__main__":  # guarded: spawned worker processes import this module as ``__mp_main__``
    from .cli import main

    raise SystemExit(main())
