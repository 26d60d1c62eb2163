"""Python client for Mnemo: long-term memory for chat applications.

    from mnemo_client import Mnemo

    with Mnemo("http://127.0.0.1:8000", api_key="...") as mnemo:
        session = mnemo.sessions.create(title="Trip planning")
        for event in mnemo.chat_stream(
            [{"role": "user", "content": "I'm flying to Lisbon in May."}],
            session_id=session["session_id"],
        ):
            ...
        mnemo.commit(session["session_id"])
        print(mnemo.search("Where am I flying?")["items"][0]["content"])

`AsyncMnemo` is the same surface for asyncio. Errors raise `MnemoError`.
"""

from mnemo_client._core import RetryPolicy
from mnemo_client.client import AsyncMnemo, Mnemo
from mnemo_client.errors import MnemoError
from mnemo_client.operations import OPERATIONS, Operation

__all__ = ["OPERATIONS", "AsyncMnemo", "Mnemo", "MnemoError", "Operation", "RetryPolicy"]
__version__ = "0.1.0"
