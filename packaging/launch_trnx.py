"""Entry point of the packaged command line (`trnx ...`), shipped beside the app."""

import sys

from explorer.cli.main import main

if __name__ == "__main__":
    sys.exit(main())
