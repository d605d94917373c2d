"""The auth files of LangGraph's own tutorials, written as the tutorials write them, and a project that serves them.

`PRIVATE` is "Make conversations private" (part 2 of LangGraph's auth series: the authentication of part 1 and one
`@auth.on` handler that stamps and filters an owner); `SCOPED` adds that tutorial's scoped handlers ("resource
authorization": threads created and read by their owner, assistants refused, the store scoped to the user's own
namespace). The served graph is named `agent` and takes `messages`, as the tutorials' template does.
"""

from __future__ import annotations

import textwrap
from pathlib import Path
from typing import Any

from langgraph_sdk import get_client, get_sync_client

PRIVATE = '''
from langgraph_sdk import Auth

# Keep our test users from the previous tutorial
VALID_TOKENS = {
    "user1-token": {"id": "user1", "name": "Alice"},
    "user2-token": {"id": "user2", "name": "Bob"},
}

auth = Auth()


@auth.authenticate
async def get_current_user(authorization: str | None) -> Auth.types.MinimalUserDict:
    """Our authentication handler from the previous tutorial."""
    assert authorization
    scheme, token = authorization.split()
    assert scheme.lower() == "bearer"

    if token not in VALID_TOKENS:
        raise Auth.exceptions.HTTPException(status_code=401, detail="Invalid token")

    user_data = VALID_TOKENS[token]
    return {
        "identity": user_data["id"],
    }


@auth.on
async def add_owner(
    ctx: Auth.types.AuthContext,  # Contains info about the current user
    value: dict,  # The resource being created/accessed
):
    """Make resources private to their creator."""
    # Add owner when creating resources
    filters = {"owner": ctx.user.identity}
    metadata = value.setdefault("metadata", {})
    metadata.update(filters)

    # Only let users see their own resources
    return filters
'''

SCOPED = (
    PRIVATE
    + '''

@auth.on.threads.create
async def on_thread_create(
    ctx: Auth.types.AuthContext,
    value: Auth.types.on.threads.create.value,
):
    """Add owner when creating threads."""
    metadata = value.setdefault("metadata", {})
    metadata["owner"] = ctx.user.identity
    return {"owner": ctx.user.identity}


@auth.on.threads.read
async def on_thread_read(
    ctx: Auth.types.AuthContext,
    value: Auth.types.on.threads.read.value,
):
    """Only let users read their own threads."""
    return {"owner": ctx.user.identity}


@auth.on.assistants
async def on_assistants(
    ctx: Auth.types.AuthContext,
    value: Auth.types.on.assistants.value,
):
    # For illustration purposes, we will deny all requests
    # that touch the assistants resource
    raise Auth.exceptions.HTTPException(
        status_code=403,
        detail="User lacks the required permissions.",
    )


@auth.on.store()
async def authorize_store(ctx: Auth.types.AuthContext, value: dict):
    # The "namespace" field for each store item is a tuple you can think of as the directory of an item.
    namespace: tuple = value["namespace"]
    assert namespace[0] == ctx.user.identity, "Not authorized"
'''
)

AGENT_GRAPH = """
GraphName,Node,AgentType,Input_Fields,Output_Field
agent,Reply,echo,messages,reply
"""

TOKEN_USER = """
from langgraph_sdk import Auth

TOKENS = {tokens!r}
auth = Auth()


@auth.authenticate
async def who(authorization: str | None):
    scheme, _, token = (authorization or "").partition(" ")
    if scheme.lower() != "bearer" or token not in TOKENS:
        raise Auth.exceptions.HTTPException(status_code=401, detail={refusal!r})
    return TOKENS[token]


@auth.on
async def owner(ctx, value):
    value.setdefault("metadata", {{}})["owner"] = ctx.user.identity
    return {{"owner": ctx.user.identity}}
"""

GRAPHS_OPEN = """

@auth.on.assistants
async def anyone_reads_the_graphs(ctx, value):
    return None
"""

OWN_STORE = """

@auth.on.store
async def own_namespace(ctx, value):
    value["namespace"] = (ctx.user.identity, *(value.get("namespace") or ()))
"""

ALICE = {"Authorization": "Bearer user1-token"}
BOB = {"Authorization": "Bearer user2-token"}


def project(folder: Path, auth: str, graph: str = AGENT_GRAPH) -> tuple[Path, str]:
    """`folder` with `agent.csv` (`graph`) and `auth.py` (`auth`); the workflow and the `--auth` value."""
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "agent.csv").write_text(textwrap.dedent(graph).lstrip(), encoding="utf-8")
    (folder / "auth.py").write_text(auth, encoding="utf-8")
    return folder / "agent.csv", f"{folder / 'auth.py'}:auth"


def client(url: str, headers: dict[str, str] | None = None) -> Any:
    """langgraph-sdk's sync client with `headers` (a user's token), and no API key from the environment."""
    return get_sync_client(url=url, api_key=None, headers=headers)


def async_client(url: str, headers: dict[str, str] | None = None) -> Any:
    """langgraph-sdk's async client with `headers`, as the tutorials make theirs."""
    return get_client(url=url, api_key=None, headers=headers)


def token_users(
    tokens: dict[str, str], *, refusal: str = "who are you?", graphs_open: bool = False, own_store: bool = False
) -> str:
    """An auth file whose users sign in with a bearer token (`tokens`: token -> user; any other is refused with
    `refusal`, 401) and each own the threads and runs they make; `graphs_open` lets every user read the graphs,
    `own_store` gives each user their own namespace of the store."""
    text = TOKEN_USER.format(tokens=tokens, refusal=refusal)
    return text + (GRAPHS_OPEN if graphs_open else "") + (OWN_STORE if own_store else "")
