"""Pure, shared parts: the authoring API, guards, durations, the graph file, wire shapes.

Nothing here imports another part of Stateous, nor litestar, sqlalchemy, httpx or textual.
"""
