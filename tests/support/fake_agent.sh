#!/bin/sh
# A stand-in for an agent CLI speaking stream-json (one JSON object per line in and out).
# It answers every user message; special messages drive the test scenarios:
#   "ask tool"     emits a tool_request and waits for the answer on stdin
#   "write NAME"   writes a file in the workspace (for project_changes)
#   "stubborn"     stops reading and ignores SIGTERM (only a forced end stops it)
#   "exit N"       exits with status N
#   "sleep N"      works for N seconds before answering
#   "fail"         answers with an error result
#   "call URL TOOL ACTION"  calls TOOL at Jarvis's MCP endpoint URL (one 2026-07-28 tools/call over HTTP, through the
#                  egress proxy its http_proxy names) with its JARVIS_TOKEN, as an agent CLI's MCP client does:
#                  arguments {"action": ACTION, "project_id": its project}, and no trace context of its own
call_jarvis() {
  meta='"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{},'
  meta="$meta"'"io.modelcontextprotocol/clientInfo":{"name":"fake-agent","version":"1"}'
  body=$(printf '{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"%s","arguments":{"action":"%s","project_id":"%s"},"_meta":{%s}}}' \
    "$2" "$3" "$JARVIS_PROJECT_ID" "$meta")
  # Written out for nc: busybox wget sends a proxied request as GET, whatever its --post-data.
  host=${1#http://}; host=${host%%/*}; proxy=${http_proxy#http://}; proxy=${proxy%/}
  # nc stops reading at the end of its input: the input stays open while the answer comes (Connection: close).
  answer=$({ printf 'POST %s HTTP/1.1\r\nHost: %s\r\nAuthorization: Bearer %s\r\nContent-Type: application/json\r\nAccept: application/json, text/event-stream\r\nMCP-Protocol-Version: 2026-07-28\r\nMcp-Method: tools/call\r\nMcp-Name: %s\r\nContent-Length: %s\r\nConnection: close\r\n\r\n%s' \
    "$1" "$host" "$JARVIS_TOKEN" "$2" "${#body}" "$body"; sleep 5; } | nc "${proxy%:*}" "${proxy##*:}" 2>&1)
  case "$answer" in
    *'"result"'*'"isError":true'*|*'"error":{'*) echo "called $2: refused";;
    *'"result"'*) echo "called $2: answered";;
    *) echo "called $2: unreachable: $(printf '%s' "$answer" | tr -d '"\\' | tr '\n' ' ' | head -c 1500)";;
  esac
}
printf '{"type":"system","subtype":"init","cwd":"%s","session_id":"%s"}\n' "$PWD" "$JARVIS_SESSION_ID"
while IFS= read -r line; do
  case "$line" in
    *'"type":"tool_response"'*|*'"type":"control_response"'*)
      printf '{"type":"assistant","message":{"content":[{"type":"text","text":"tool answered"}]},"answer":%s}\n' "$line"
      continue;;
  esac
  text=$(printf '%s' "$line" | sed -n 's/.*"text":"\([^"]*\)".*/\1/p')
  [ -n "$text" ] || text=$line
  case "$text" in
    "exit "*) printf '{"type":"result","subtype":"success","result":"bye"}\n'; exit "${text#exit }";;
    "ask tool") printf '{"type":"tool_request","request_id":"req-1","tool":"jarvis_check_status","arguments":{}}\n'
                continue;;
    "sleep "*) sleep "${text#sleep }";;
    "fail") printf '{"type":"result","subtype":"error_during_execution","is_error":true,"result":"it broke"}\n'
            continue;;
    "call "*) text=$(call_jarvis ${text#call });;
    "write "*) echo "written by the agent" > "${text#write }";;
    "stubborn") trap '' TERM HUP; while :; do sleep 1; done;;
  esac
  printf '{"type":"assistant","message":{"content":[{"type":"text","text":"echo: %s"}]}}\n' "$text"
  printf '{"type":"result","subtype":"success","result":"echo: %s"}\n' "$text"
done
printf '{"type":"result","subtype":"input_closed","result":"bye"}\n'
