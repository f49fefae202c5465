import os

os.environ.setdefault("TW_VERIFY", "1")
