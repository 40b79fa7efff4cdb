"""``python -m autotune.cli``: the ``autotune`` command."""

from autotune.cli.app import main

raise SystemExit(main())
