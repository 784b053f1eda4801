"""Entry point of the packaged command line (`trnx ...`), shipped beside the app."""

import multiprocessing
import sys

if __name__ == "__main__":
    multiprocessing.freeze_support()  # worker processes of multi-chip captures re-run this program
    from explorer.cli.main import main

    sys.exit(main())
