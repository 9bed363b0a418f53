import sys

from wikisim.cli import main

sys.exit(main())
