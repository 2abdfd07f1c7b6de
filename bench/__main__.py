"""``python -m bench``: the benchmark (see ``bench/run.py``)."""

from bench.run import main

raise SystemExit(main())
