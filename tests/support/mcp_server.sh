#!/bin/sh
# A tiny MCP server for tests, nothing but busybox: newline-delimited JSON-RPC on stdin and stdout.
# Tools: echo (answers its text), whoami (the container's hostname and uid), crash (exits with code 7).
# It reads the compact JSON Jarvis sends: a value is taken from the first "key": in the line.

say() { printf '%s\n' "$1"; }

# The first string value of key $1 in $line, into $v (empty when absent).
str() {
  case $line in
    *"\"$1\":\""*) v=${line#*\"$1\":\"}; v=${v%%\"*} ;;
    *) v= ;;
  esac
}

result() { say "{\"jsonrpc\":\"2.0\",\"id\":$id,\"result\":$1}"; }
text() { result "{\"content\":[{\"type\":\"text\",\"text\":\"$1\"}]}"; }
error() { say "{\"jsonrpc\":\"2.0\",\"id\":$id,\"error\":{\"code\":$1,\"message\":\"$2\"}}"; }

TOOLS='[{"name":"echo","description":"Echo the text back","inputSchema":{"type":"object","properties":{"text":{"type":"string"}},"required":["text"]}},{"name":"whoami","description":"The container hostname and uid","inputSchema":{"type":"object","properties":{}}},{"name":"crash","description":"Exit with code 7 mid-call","inputSchema":{"type":"object","properties":{}}}]'

echo "mcp-test-server: ready as uid $(id -u)" >&2
while IFS= read -r line; do
  case $line in
    *'"id":'*) id=${line#*\"id\":}; id=${id%%[,\}]*} ;;
    *) id= ;;
  esac
  str method
  case $v in
    initialize)
      str protocolVersion
      result "{\"protocolVersion\":\"${v:-2025-06-18}\",\"capabilities\":{\"tools\":{}},\"serverInfo\":{\"name\":\"busybox-mcp\",\"version\":\"1.0\"}}" ;;
    notifications/*) ;;
    ping) result '{}' ;;
    tools/list) result "{\"tools\":$TOOLS}" ;;
    tools/call)
      str name
      case $v in
        echo) str text; text "$v" ;;
        whoami) text "host=$HOSTNAME uid=$(id -u)" ;;
        crash) echo "crashing as asked" >&2; exit 7 ;;
        *) error -32602 "unknown tool: $v" ;;
      esac ;;
    *) [ -n "$id" ] && error -32601 "method not found: $v" ;;
  esac
done
echo "mcp-test-server: stdin closed, bye" >&2
