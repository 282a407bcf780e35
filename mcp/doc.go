// Package mcp offers the tools of Model Context Protocol servers to chat
// turns. A Manager holds one client per configured server (stdio or
// streamable HTTP), starts it on first use, restarts it with backoff after
// it dies, and hands each turn the tools its sender may use, as agent.Tools
// named mcp_<server>_<tool>. A broken server is reported (Status, the log)
// and contributes no tools; it never fails a turn or the other servers.
//
// The MCP SDK's types stay inside this package. It imports agent and llm of
// ours and nothing else; Dream never gets these tools (cmd wires them into
// the gateway's chat turns only).
package mcp
