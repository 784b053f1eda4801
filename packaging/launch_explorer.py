"""Entry point of the packaged desktop app (`trn3-explorer [TRACE] [--smoke-test]`)."""

import sys

from explorer.__main__ import main

if __name__ == "__main__":
    sys.exit(main())
