"""The harness's Locust users, for Locust's own command line and web UI.

    locust -f locustfiles/llm_user.py --host http://127.0.0.1:8099 --web-host 127.0.0.1
    locust -f locustfiles/llm_user.py --headless -u 8 -r 8 -t 30s --stop-timeout 60 --host ...

The users live in the package (``harness.load.users``) so the sweep, headless runs, the web UI and
an installed wheel share one implementation; this file only exposes them to Locust.
"""

from harness.load import locust_options as options  # noqa: F401  (every option of ours declared, and checked before a start)
from harness.load import web_ui  # noqa: F401  (the Exact tab, live charts, chat-only request statistics)
from harness.load.users import ArrivalUser, ChatUser

__all__ = ["ArrivalUser", "ChatUser"]
