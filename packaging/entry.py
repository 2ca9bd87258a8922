"""The bundle's entry point: `tunebench` as built by PyInstaller (same CLI as the source install)."""

import multiprocessing

if __name__ == "__main__":
    # The run process and the builtin engine's workers are spawned: in a frozen app each child starts here.
    multiprocessing.freeze_support()
    from tunebench.cli import main

    raise SystemExit(main())
