// Package connect builds, and merges into an existing file, the client
// configuration that starts Prism's stdio programs: Zed's agent_servers
// (the ACP agent) and context_servers (the MCP server), the mcpServers of
// Claude Code (.mcp.json) and Claude Desktop, and VS Code's servers
// (.vscode/mcp.json). A merge keeps every other entry and the order of the
// file's members, writes a backup first, and refuses — changing nothing —
// a file that is not valid JSON. examples/connect is its command.
package connect
