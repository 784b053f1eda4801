"""Entry point of the packaged desktop app (`trn3-explorer [TRACE] [--smoke-test]`)."""

import multiprocessing
import sys

if __name__ == "__main__":
    # multi-chip captures simulate chips in worker processes (a forkserver pool); in a frozen
    # app those re-run this program, and freeze_support() turns them into workers
    multiprocessing.freeze_support()
    from explorer.__main__ import main

    sys.exit(main())
