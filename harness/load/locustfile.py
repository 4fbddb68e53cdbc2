"""The locustfile the sweep's worker processes load (``locust -f`` needs a file): the package's
users, nothing else, so an installed wheel needs no checkout. ``locustfiles/llm_user.py`` is the
same for people typing Locust's own command line."""

from harness.load import locust_options as options  # noqa: F401  (every option of ours declared, and checked before a start)
from harness.load.users import ArrivalUser, ChatUser

__all__ = ["ArrivalUser", "ChatUser"]
