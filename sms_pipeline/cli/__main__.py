"""``python -m sms_pipeline.cli``: the same as the ``sms-pipeline`` command."""

import sys

from sms_pipeline.cli import main

sys.exit(main())
