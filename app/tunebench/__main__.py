"""`python -m tunebench` is the same as the `tunebench` command."""

from tunebench.cli import main

raise SystemExit(main())
