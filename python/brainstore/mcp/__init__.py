"""MCP access to one Brain: ``stdio`` (local, ``brainstore mcp``) and ``hosted`` (streamable HTTP at /mcp).

The tools live in :mod:`brainstore.mcp.server` and call the HTTP API through the Python client; this
package imports the ``mcp`` SDK, so nothing here is imported by the API unless MCP is mounted.
"""
